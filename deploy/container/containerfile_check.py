#!/usr/bin/env python3
"""The image definition names only files this tree has (no image is built here).

    containerfile_check.py REPO_ROOT

Every `COPY` from the build context (not `--from=`), and every
`deploy/...` path a RUN line uses, must exist in REPO_ROOT, and every
program the Kubernetes manifests run (`command:`) must be one the image
installs. Exit 0 when all hold, 1 with one line per problem.
"""
import glob
import os
import re
import sys


def main(argv):
    root = argv[0] if argv else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    containerfile = os.path.join(root, "deploy", "container", "Containerfile")
    with open(containerfile, encoding="utf-8") as f:
        text = f.read().replace("\\\n", " ")
    problems = []
    for line in text.splitlines():
        words = line.split()
        if words[:1] == ["COPY"] and not any(w.startswith("--from=") for w in words):
            for source in words[1:-1]:
                if source != "." and not os.path.exists(os.path.join(root, source)):
                    problems.append(f"COPY {source}: no such file in the tree")
        if words[:1] == ["RUN"]:
            for path in re.findall(r"(?<![\w/])(deploy/[\w./-]+)", line):
                if not os.path.exists(os.path.join(root, path)):
                    problems.append(f"RUN uses {path}: no such file in the tree")
    installed = set(re.findall(r"/opt/gpool/bin/([\w-]+)\b", text))
    for manifest in glob.glob(os.path.join(root, "deploy", "kubernetes", "*.yaml")):
        with open(manifest, encoding="utf-8") as f:
            for program in re.findall(r'command: \["/usr/local/bin/([\w-]+)"', f.read()):
                if program not in installed:
                    problems.append(f"{os.path.basename(manifest)} runs {program}, which the image does not install")
    for p in problems:
        print(f"error: {p}")
    print(f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
