"""What the GPU check scripts (learned_gpu_check, custom_gpu_check,
int4_gpu_check) share: their command line, `--build DIR [--chip CHIP]` on
the machine with MLIR, then `--run DIR` on the GPU machine, and their last
line and exit status."""
import argparse


def summary(passed: int, failed: int) -> int:
    """Prints `N passed, M failed`; returns the exit status: 2 when nothing
    was checked, 1 on a failure, else 0."""
    print(f"{passed} passed, {failed} failed")
    if passed + failed == 0:
        return 2
    return 1 if failed else 0


def main(doc: str, build, run) -> int:
    """Parses the command line and calls `build(dir, chip)` or `run(dir)`."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--build", metavar="DIR")
    p.add_argument("--run", metavar="DIR")
    p.add_argument("--chip", default="sm_90")
    a = p.parse_args()
    if bool(a.build) == bool(a.run):
        p.error("give exactly one of --build and --run")
    return build(a.build, a.chip) if a.build else run(a.run)
