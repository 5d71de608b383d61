#!/usr/bin/env bash
# The console's browser tests drive Debian's Chromium (through Playwright's bundled driver, never a
# downloaded browser) and read Chinese pages: install chromium and a CJK font with apt-get, only when
# they are missing. Needs root, or sudo.
set -euo pipefail

need=()
[ -x /usr/bin/chromium ] || need+=(chromium)
fc-list 2>/dev/null | grep -qiE "wqy|noto sans cjk|noto serif cjk" || need+=(fonts-wqy-microhei)
[ ${#need[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
    as_root=()
elif command -v sudo >/dev/null 2>&1; then
    as_root=(sudo)
else
    echo "test-deps: ${need[*]} missing and neither root nor sudo to install it (apt-get install ${need[*]})" >&2
    exit 1
fi
echo "test-deps: installing ${need[*]}"
"${as_root[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq "${need[@]}"
