"""`python3 -m vortex.runtime.native [-v]`: build (if needed) and load the
native launcher, then print the path of the built module; exit status 1, with
the reason on stderr, when it is unavailable or the build fails."""

from __future__ import annotations

import argparse
import sys
from typing import List, Optional

from . import build_directory, failure_detail, load, unavailable_reason


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m vortex.runtime.native",
        description="Build the vortex native CUDA launcher (a torch C++ "
                    "extension) into its cache directory.")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="show the compiler and ninja output")
    args = parser.parse_args(argv)
    module = load(build=True, verbose=args.verbose)
    if module is None:
        if args.verbose and failure_detail():
            print(failure_detail(), file=sys.stderr)
        # One line: what is missing and what fixes it (ctypes launches the
        # kernels meanwhile).
        print(f"vortex.runtime.native: unavailable: {unavailable_reason()}",
              file=sys.stderr)
        return 1
    print(f"vortex.runtime.native: built in {build_directory()}",
          file=sys.stderr)
    print(module.__file__)
    return 0


if __name__ == "__main__":
    sys.exit(main())
