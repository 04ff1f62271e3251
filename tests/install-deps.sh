#!/bin/sh
# install-deps.sh PKG... - make sure the named Debian packages are installed.
# As root, installs the missing ones with apt-get; otherwise lists them and fails.
set -u
missing=""
for p in "$@"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	echo "installing:$missing" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >&2 || true
	apt-get install -y -qq --no-install-recommends $missing >&2 || {
		echo "apt-get install failed for:$missing" >&2; exit 1; }
	exit 0
fi
echo "missing Debian packages:$missing" >&2
echo "install them as root: apt-get install$missing" >&2
exit 1
