#!/usr/bin/env python3
"""Runs restore-pod.yaml's script on this machine (docs/operations.md 15.6).

    restore_pod_test.py --gpool BIN --coordinator BIN

A single --insecure coordinator on ephemeral 127.0.0.1 ports gets a queue and
is saved with `gpool admin snapshot save`, then stopped (by its PID). The pod's
script, its paths moved into a temp dir, then restores that file over a data
dir holding an old db: the new db is in place, the old one under previous-*/.
With a file that does not exist it must fail and leave the old data alone;
with the snapshot verify key mounted (issue 48) an unsigned file must fail
too, and the file signed with that key is the one restored.
Exit 0 when all hold.
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))


def pod_script(root):
    with open(os.path.join(HERE, "restore-pod.yaml"), encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    script = doc["spec"]["containers"][0]["command"][2]
    return (script.replace("/var/lib/gpool/coordinator", f"{root}/data").replace("/backups/", f"{root}/backups/")
            .replace("/etc/gpool/snapshot-verify/", f"{root}/verify/"))


def save_snapshots(args, root, saves):
    data = f"{root}/source"
    log = open(f"{root}/coordinator.log", "w")
    coordinator = subprocess.Popen([args.coordinator, "--insecure", "--data-dir", data, "--client-addr",
                                    "tcp://127.0.0.1:0", "--worker-addr", "tcp://127.0.0.1:0", "--http-address",
                                    "none"], stdout=log, stderr=log)
    try:
        endpoints = f"{data}/endpoints"
        deadline = time.monotonic() + 30
        while not os.path.exists(endpoints):
            if coordinator.poll() is not None or time.monotonic() > deadline:
                sys.exit("the coordinator did not start; see " + log.name)
            time.sleep(0.05)
        with open(endpoints, encoding="utf-8") as f:
            client = next(line.split()[1] for line in f if line.startswith("client "))
        gpool = [args.gpool, "--insecure", "-c", client]
        subprocess.run(gpool + ["queue", "create", "restored-queue", "--capability", "gpu=2"], check=True)
        for path, extra in saves:
            subprocess.run(gpool + ["admin", "snapshot", "save", path] + extra, check=True)
    finally:
        coordinator.send_signal(signal.SIGTERM)
        coordinator.wait(timeout=30)


def run_script(args, root, snapshot):
    env = dict(os.environ, SNAPSHOT=snapshot, PATH=os.path.dirname(args.gpool) + ":" + os.environ["PATH"],
               PEERS="1=tcp://a:7402,2=tcp://b:7402,3=tcp://c:7402")
    return subprocess.run(["/bin/sh", "-c", pod_script(root)], env=env, capture_output=True, text=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpool", required=True)
    parser.add_argument("--coordinator", required=True)
    args = parser.parse_args()
    problems = []
    root = tempfile.mkdtemp(prefix="gpool-restore-pod-")
    try:
        os.makedirs(f"{root}/backups")
        os.makedirs(f"{root}/data/state/db")  # issue 48: the data dir is <volume>/state
        with open(f"{root}/data/state/db/OLD", "w") as f:
            f.write("the old data")
        # `gpool admin snapshot restore` runs the coordinator found beside gpool or on PATH.
        os.symlink(os.path.abspath(args.coordinator), f"{root}/gpool-coordinator")
        os.environ["PATH"] = root + ":" + os.environ["PATH"]
        os.makedirs(f"{root}/verify")
        subprocess.run([args.gpool, "admin", "snapshot", "keygen", "--out", f"{root}/verify/snapshot-sign"],
                       check=True, capture_output=True)
        save_snapshots(args, root, [(f"{root}/backups/b.gpoolsnap", []),
                                    (f"{root}/backups/s.gpoolsnap",
                                     ["--sign-key", f"{root}/verify/snapshot-sign.key"])])

        missing = run_script(args, root, "nothing.gpoolsnap")
        if missing.returncode == 0:
            problems.append("a missing snapshot file was restored")
        if not os.path.exists(f"{root}/data/state/db/OLD"):
            problems.append("a failed restore moved the old data")

        unsigned = run_script(args, root, "b.gpoolsnap")
        if unsigned.returncode == 0:
            problems.append("an unsigned file was restored with the verify key mounted")
        if not os.path.exists(f"{root}/data/state/db/OLD"):
            problems.append("a refused unsigned restore moved the old data")

        done = run_script(args, root, "s.gpoolsnap")
        if done.returncode != 0:
            problems.append(f"restore failed (exit {done.returncode}): {done.stdout}{done.stderr}")
        entries = sorted(os.listdir(f"{root}/data"))
        previous = [e for e in entries if e.startswith("previous-")]
        if len(previous) != 1 or not os.path.exists(f"{root}/data/{previous[0]}/db/OLD"):
            problems.append(f"the old data is not under previous-*/: {entries}")
        if not os.path.exists(f"{root}/data/state/db/CURRENT") or os.path.exists(f"{root}/data/state/db/OLD"):
            problems.append(f"the restored db is not in place: {sorted(os.listdir(root + '/data/state/db'))}")
        # The image is a file beside the db (the db holds only a reference
        # to it): a restore that left it behind starts no coordinator.
        images = [e for e in os.listdir(f"{root}/data/state") if e.startswith("snapshot-") and e.endswith(".img")]
        if len(images) != 1:
            problems.append(f"the restored image file is not beside the db: {sorted(os.listdir(root + '/data/state'))}")
        if os.stat(f"{root}/data/state").st_mode & 0o077:
            problems.append("the restored data dir is open to group or others")
        if os.path.exists(f"{root}/data/.restoring"):
            problems.append("the scratch dir .restoring was left behind")
        if "a replica of a cluster of 3" not in done.stdout:
            problems.append(f"unexpected report: {done.stdout}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    for problem in problems:
        print("error:", problem)
    print(f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
