#!/usr/bin/env python3
"""Checks the example systemd units offline.

    verify_units.py --units DIR --main control/main.cc [--bin NAME=PATH]...

1. `systemd-analyze verify` on copies of every unit in DIR, with each
   /usr/local/bin/NAME in them replaced by the PATH given (verify wants the
   programs to exist). Any output counts as a failure: verify exits 0 on
   "Unknown key" and "Failed to parse value", which are real mistakes.
2. gpool-coordinator.service restarts exactly the coordinator's exit codes
   that a restart may fix: Restart=on-failure (Restart=always would restart a
   clean exit too), and RestartPreventExitStatus= lists the codes control/main.cc
   names kExitUsage, kExitPermanent and kExitRemoved, and not kExitFailure.
   So a replica removed from the cluster (kExitRemoved) is not started again.
Exit 0 when all hold; 1 with one line per problem otherwise.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile


def unit_settings(path):
    """The unit's Key=value lines, continuation lines joined; last one wins."""
    settings = {}
    with open(path, encoding="utf-8") as f:
        text = f.read().replace("\\\n", " ")
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in "#;[" or "=" not in line:
            continue
        key, value = line.split("=", 1)
        settings[key.strip()] = value.strip()
    return settings


def exit_codes(main_cc):
    with open(main_cc, encoding="utf-8") as f:
        return {m.group(1): int(m.group(2)) for m in re.finditer(r"constexpr int (kExit\w+) = (\d+);", f.read())}


def verify(units_dir, binaries):
    problems = []
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        return ["systemd-analyze not found (Debian: systemd)"]
    with tempfile.TemporaryDirectory() as tmp:
        copies = []
        for name in sorted(os.listdir(units_dir)):
            if not name.endswith((".service", ".timer")):
                continue
            with open(os.path.join(units_dir, name), encoding="utf-8") as f:
                text = f.read()
            for program, path in binaries.items():
                text = text.replace(f"/usr/local/bin/{program} ", f"{path} ")
            copy = os.path.join(tmp, name)
            with open(copy, "w", encoding="utf-8") as f:
                f.write(text)
            copies.append(copy)
        if not copies:
            return [f"no units in {units_dir}"]
        run = subprocess.run([analyze, "verify", "--man=no", *copies], capture_output=True, text=True, cwd=tmp,
                             check=False)
        output = (run.stdout + run.stderr).strip()
        if run.returncode != 0 or output:
            problems.append(f"systemd-analyze verify (exit {run.returncode}):\n{output}")
    return problems


def check_coordinator(unit, codes):
    problems = []
    needed = {"kExitFailure", "kExitUsage", "kExitPermanent", "kExitRemoved"}
    if not needed <= codes.keys():
        return [f"control/main.cc names {sorted(codes)}, not all of {sorted(needed)}"]
    settings = unit_settings(unit)
    if settings.get("Restart") != "on-failure":
        problems.append(f"{unit}: Restart={settings.get('Restart')}, want on-failure (a clean exit is final)")
    prevent = {int(v) for v in settings.get("RestartPreventExitStatus", "").split() if v.isdigit()}
    want = {codes["kExitUsage"], codes["kExitPermanent"], codes["kExitRemoved"]}
    if prevent != want:
        problems.append(f"{unit}: RestartPreventExitStatus={sorted(prevent)}, want {sorted(want)} "
                        "(bad command line, unusable data dir or key, removed replica)")
    if codes["kExitFailure"] in prevent:
        problems.append(f"{unit}: kExitFailure ({codes['kExitFailure']}) may pass with a restart")
    # Issue 48: the data dir holds every job's environment.
    if settings.get("UMask") != "0077":
        problems.append(f"{unit}: UMask={settings.get('UMask')}, want 0077 (the data dir is private)")
    return problems


def main(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("--units", required=True)
    parser.add_argument("--main", required=True, help="control/main.cc")
    parser.add_argument("--bin", action="append", default=[], help="NAME=PATH")
    args = parser.parse_args(argv)
    binaries = {}
    problems = []
    for item in args.bin:
        name, _, path = item.partition("=")
        if not os.access(path, os.X_OK):
            problems.append(f"--bin {name}: {path} is not an executable (build it first)")
        binaries[name] = path
    problems += verify(args.units, binaries)
    coordinator = os.path.join(args.units, "gpool-coordinator.service")
    if os.path.exists(coordinator):
        problems += check_coordinator(coordinator, exit_codes(args.main))
    else:
        problems.append(f"no {coordinator}")
    for p in problems:
        print(f"error: {p}")
    print(f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
