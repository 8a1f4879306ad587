#!/bin/bash
# runtime-packages.sh FILE...: the Debian packages that hold the shared
# libraries FILE... load (ldd), one a line, sorted. The image's build stage
# runs it on the installed programs, and the runtime stage installs exactly
# these, so the image carries no -dev package and no compiler.
# Exit 1 naming a library no package holds (one built by hand would be missing
# from the runtime image).
set -euo pipefail
declare -A packages=()
status=0
for file in "$@"; do
  while read -r lib; do
    real=$(readlink -f "$lib")
    # Debian 12 merged /lib into /usr/lib; dpkg knows each file by one of the names.
    owner=""
    for candidate in "$lib" "$real" "${real#/usr}" "/usr${real}"; do
      if owner=$(dpkg-query -S "$candidate" 2>/dev/null); then break; fi
      owner=""
    done
    if [[ -z $owner ]]; then
      echo "runtime-packages: no package holds $lib (needed by $file)" >&2
      status=1
      continue
    fi
    packages[${owner%%:*}]=1
  done < <(ldd "$file" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}')
done
if ((${#packages[@]})); then printf '%s\n' "${!packages[@]}" | sort; fi
exit $status
