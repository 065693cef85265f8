#!/usr/bin/env bash
# Fails when a tracked file is over 1 MB or is a compiled binary (ELF,
# Mach-O, PE, or an ar archive): build outputs belong in .gitignore, not in
# the repository. Run by `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."
limit=$((1024 * 1024))
bad=0
while IFS= read -r -d '' f; do
  [ -f "$f" ] || continue
  size=$(wc -c <"$f")
  if [ "$size" -gt "$limit" ]; then
    echo "tracked file over 1 MB: $f ($size bytes)" >&2
    bad=1
    continue
  fi
  magic=$(head -c 4 "$f" | od -An -tx1 | tr -d ' \n')
  case "$magic" in
    7f454c46 | feedface | feedfacf | cefaedfe | cffaedfe | cafebabe | 213c6172)
      echo "tracked file is a compiled binary: $f" >&2
      bad=1
      ;;
    4d5a*)
      echo "tracked file is a compiled binary (PE): $f" >&2
      bad=1
      ;;
  esac
done < <(git ls-files -z)
exit $bad
