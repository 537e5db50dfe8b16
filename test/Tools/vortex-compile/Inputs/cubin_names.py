"""Prints the global functions of each cubin (an ELF64 image) named on the
command line, as `<file>: <name>`, and any trace of the kernel cache's own
kernel name left in it."""
import os
import struct
import sys

for path in sys.argv[1:]:
    data = open(path, "rb").read()
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, _ = struct.unpack_from("<HHH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
                for i in range(shnum)]
    for sh in sections:
        if sh[1] != 2:  # SHT_SYMTAB
            continue
        strtab = sections[sh[6]]
        for off in range(sh[4], sh[4] + sh[5], 24):
            st_name, st_info = struct.unpack_from("<IB", data, off)
            if st_info == 0x12:  # STB_GLOBAL, STT_FUNC
                start = strtab[4] + st_name
                name = data[start:data.index(b"\0", start)].decode()
                print(f"{os.path.basename(path)}: {name}")
    if b"vortex_cached_kernel" in data:
        print(f"{os.path.basename(path)}: the cache's kernel name is left")
