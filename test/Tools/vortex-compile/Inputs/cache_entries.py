"""Prints, for each entry of a kernel cache directory, whether it is what
its file name says: a first line naming the cache format and its own key,
then an ELF image (a .cubin entry) or PTX (a .ptx entry)."""
import os
import sys

directory = sys.argv[1]
for name in sorted(os.listdir(directory)):
    with open(os.path.join(directory, name), "rb") as f:
        header, _, body = f.read().partition(b"\n")
    if header != b"vortex-kernel-cache-2 " + name.encode():
        print(f"{name}: a header that is not its key's: {header[:80]!r}")
    elif name.endswith(".cubin") and body.startswith(b"\x7fELF"):
        print(f"{name}: the entry of its key, ELF")
    elif name.endswith(".ptx") and b".entry" in body:
        print(f"{name}: the entry of its key, PTX")
    else:
        print(f"{name}: not a {name.rsplit('.', 1)[-1]}")
