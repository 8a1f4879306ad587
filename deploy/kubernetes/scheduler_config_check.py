#!/usr/bin/python3
"""gpool-coordinator loads the scheduler config the ConfigMap ships.

    scheduler_config_check.py GPOOL_COORDINATOR scheduler-configmap.yaml

Writes the ConfigMap's scheduler.conf to a file and runs
`gpool-coordinator --scheduler-config FILE --print-scheduler-config`, which
exits 2 naming the line for a file that does not load. Exit 0 when it loads.
"""
import os
import subprocess
import sys
import tempfile

import yaml


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    binary, manifest = argv
    with open(manifest, encoding="utf-8") as f:
        config = yaml.safe_load(f)["data"]["scheduler.conf"]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "scheduler.conf")
        with open(path, "w", encoding="utf-8") as f:
            f.write(config)
        run = subprocess.run([binary, "--scheduler-config", path, "--print-scheduler-config"], capture_output=True,
                             text=True, check=False)
    if run.returncode != 0:
        print(f"error: gpool-coordinator refused {manifest}'s scheduler.conf (exit {run.returncode}):\n"
              f"{run.stdout}{run.stderr}")
        return 1
    print(f"{manifest}: scheduler.conf loads; in effect:\n{run.stdout}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
