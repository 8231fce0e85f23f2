#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Lists the source files (Go, shell, Python) that git tracks and that lack
# the SPDX license line the repository's files carry:
#
#	// SPDX-License-Identifier: Apache-2.0     (Go)
#	# SPDX-License-Identifier: Apache-2.0      (shell, Python; after a #! line)
#
# With -fix it adds the line to each of them. Without, it prints them and
# exits 1 when there are any.
set -euo pipefail
cd "$(dirname "$0")/.."
line='SPDX-License-Identifier: Apache-2.0'
missing=()
while IFS= read -r f; do
	head -n 3 "$f" | grep -q "$line" || missing+=("$f")
done < <(git ls-files '*.go' '*.sh' '*.py' 'hack/*' '.ci/*' | sort -u | while read -r f; do
	case "$f" in
	*.go | *.sh | *.py) echo "$f" ;;
	*) head -n 1 "$f" | grep -q '^#!.*\(bash\|sh\|python\)' && echo "$f" ;;
	esac
done)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "${1:-}" != -fix ]; then
	echo "files without '$line' (hack/spdx.sh -fix adds it):"
	printf '  %s\n' "${missing[@]}"
	exit 1
fi
for f in "${missing[@]}"; do
	case "$f" in
	*.go) { printf '// %s\n\n' "$line"; cat "$f"; } >"$f.spdx" ;;
	*)
		if head -n 1 "$f" | grep -q '^#!'; then
			{ head -n 1 "$f"; printf '# %s\n' "$line"; tail -n +2 "$f"; } >"$f.spdx"
		else
			{ printf '# %s\n' "$line"; cat "$f"; } >"$f.spdx"
		fi
		;;
	esac
	chmod --reference="$f" "$f.spdx"
	mv "$f.spdx" "$f"
done
