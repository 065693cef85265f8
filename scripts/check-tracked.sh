#!/usr/bin/env bash
# Fails when a tracked file is over 1 MB or is a compiled binary (ELF,
# Mach-O, PE, or an ar archive): build outputs belong in .gitignore, not in
# the repository. Run by `make test`.
#
# The one kind of build output that is committed is the front end's
# bundles, so that building the binary needs Go alone; `npm run check` (in
# go test ./mcpserver) proves they match their sources. Those over 1 MB are
# named in scripts/large-bundles.txt, with a limit of 8 MB each.
set -euo pipefail
cd "$(dirname "$0")/.."
limit=$((1024 * 1024))
bundle_limit=$((8 * 1024 * 1024))
bad=0
allowed=$(grep -v '^#' scripts/large-bundles.txt 2>/dev/null | awk '{print $1}')
while IFS= read -r -d '' f; do
  [ -f "$f" ] || continue
  size=$(wc -c <"$f")
  if [ "$size" -gt "$limit" ] && printf '%s\n' "$allowed" | grep -qxF "$f"; then
    if [ "$size" -gt "$bundle_limit" ]; then
      echo "front-end bundle over 8 MB: $f ($size bytes)" >&2
      bad=1
    fi
    continue
  fi
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
