"""Check that .ci/run runs the README's two commands, in order.

    python check_readme_ci.py README.md .ci/run

The README's commands are the command lines of the first ```sh block under
"## The two commands" (comments stripped); .ci/run's are its lines that run
a ./scripts/ command (after an optional `exec`). Exit 1, naming both lists,
when they differ."""

import re
import sys


def readme_commands(path):
    text = open(path).read()
    section = text.split("## The two commands", 1)
    if len(section) < 2:
        return []
    block = re.search(r"```sh\n(.*?)```", section[1], re.S)
    if not block:
        return []
    cmds = []
    for line in block.group(1).splitlines():
        cmd = line.split("#", 1)[0].strip()
        if cmd:
            cmds.append(cmd)
    return cmds


def ci_commands(path):
    cmds = []
    for line in open(path):
        line = line.split("#", 1)[0].strip()
        if line.startswith("exec "):
            line = line[len("exec "):].strip()
        if line.startswith("./scripts/"):
            cmds.append(line)
    return cmds


def main(argv):
    readme, ci = readme_commands(argv[1]), ci_commands(argv[2])
    if len(readme) != 2 or readme != ci:
        print(f"README runs {', '.join(readme) or 'nothing'} but .ci/run "
              f"runs {', '.join(ci) or 'nothing'}", file=sys.stderr)
        return 1
    print(f"README and .ci/run agree: {', '.join(readme)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
