#!/usr/bin/env bash
# build.sh builds the local cloud's tools into a cache directory outside the
# source tree and checks the AWS emulator:
#
#   etcd                      from test/tools/etcd  (go.etcd.io/etcd/server/v3)
#   kube-apiserver,
#   kube-controller-manager,
#   kube-scheduler            from test/tools/kube  (k8s.io/kubernetes + staging replaces)
#   kwok + stage files        from test/tools/kwok  (sigs.k8s.io/kwok)
#   moto_server               the one on PATH when its version matches, else pip
#   cfn-lint                  the one on PATH when its version matches, else pip
#                             (the stack tests lint every synthesized template)
#   chromium                  Debian's chromium, installed with apt-get when missing
#                             (test/report renders report.html in it); never fails
#                             the build: without it only that test fails, saying so
#
# Each build module pins its version in its own go.mod/go.sum, so the product's
# go.mod never carries k8s.io/kubernetes. A tool is rebuilt only when its stamp
# (a hash of the build module, the Go version and the link flags) changes.
#
# Usage: build.sh [TOOLS_DIR]   (default: $NODEWRIGHT_TOOLS, else ~/.cache/nodewright/tools)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tools="${1:-${NODEWRIGHT_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/nodewright/tools}}"
moto_version="5.2.1"
cfn_lint_version="1.51.0"
go="${GO:-go}"
build_flags=(-trimpath -buildvcs=false)

mkdir -p "$tools/bin" "$tools/stamps"

log() { printf '==> tools: %s\n' "$*"; }

# stamp_key prints a hash of everything that decides a tool's binary.
stamp_key() {
	local dir="$1"; shift
	{
		"$go" version
		printf '%s\n' "${build_flags[@]}" "$@"
		(cd "$dir" && cat go.mod go.sum ./*.go)
	} | sha256sum | cut -d' ' -f1
}

# up_to_date NAME KEY BIN...: the stamp matches and every binary exists.
up_to_date() {
	local name="$1" key="$2"; shift 2
	[[ -f "$tools/stamps/$name" && "$(cat "$tools/stamps/$name")" == "$key" ]] || return 1
	local b
	for b in "$@"; do [[ -x "$tools/bin/$b" ]] || return 1; done
}

# module_version DIR MODULE prints the version DIR's go.mod pins for MODULE.
module_version() {
	(cd "$1" && "$go" list -m -f '{{.Version}}' "$2")
}

# build NAME DIR LDFLAGS PKG...: go build the packages of DIR's module into bin/.
build() {
	local name="$1" dir="$2" ldflags="$3"; shift 3
	local bins=() p
	for p in "$@"; do bins+=("$(basename "$p")"); done
	local key
	key="$(stamp_key "$dir" "$ldflags")"
	if up_to_date "$name" "$key" "${bins[@]}"; then
		log "$name: up to date (${bins[*]})"
		return
	fi
	log "$name: building ${bins[*]} (a cold build takes minutes; output goes to $tools/bin)"
	local start=$SECONDS tmp
	tmp="$(mktemp -d "$tools/bin/.build-XXXXXX")"
	trap 'rm -rf "$tmp"' EXIT
	(cd "$dir" && "$go" build "${build_flags[@]}" -ldflags "$ldflags" -o "$tmp/" "$@")
	for p in "${bins[@]}"; do mv -f "$tmp/$p" "$tools/bin/$p"; done
	rmdir "$tmp"
	trap - EXIT
	printf '%s\n' "$key" > "$tools/stamps/$name"
	log "$name: built in $((SECONDS - start))s"
}

build_etcd() {
	local v
	v="$(module_version "$here/etcd" go.etcd.io/etcd/server/v3)"
	build "etcd-$v" "$here/etcd" "-s -w" github.com/nodewright/nodewright/test/tools/etcd
}

build_kube() {
	local v major minor ld="-s -w" pkg
	v="$(module_version "$here/kube" k8s.io/kubernetes)"
	major="${v#v}"; major="${major%%.*}"
	minor="${v#v*.}"; minor="${minor%%.*}"
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		ld+=" -X $pkg.gitVersion=$v -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
		ld+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
	done
	build "kube-$v" "$here/kube" "$ld" \
		k8s.io/kubernetes/cmd/kube-apiserver \
		k8s.io/kubernetes/cmd/kube-controller-manager \
		k8s.io/kubernetes/cmd/kube-scheduler
}

build_kwok() {
	local v src stage
	v="$(module_version "$here/kwok" sigs.k8s.io/kwok)"
	build "kwok-$v" "$here/kwok" "-s -w" sigs.k8s.io/kwok/cmd/kwok
	# The stage files that drive kwok ship in the same module version.
	src="$(cd "$here/kwok" && "$go" list -m -f '{{.Dir}}' sigs.k8s.io/kwok)/kustomize/stage"
	stage="$tools/kwok-stage"
	rm -rf "$stage"; mkdir -p "$stage"
	cp "$src/node/fast/node-initialize.yaml" "$src/node/heartbeat/node-heartbeat.yaml" \
		"$src/pod/fast/pod-ready.yaml" "$src/pod/fast/pod-complete.yaml" \
		"$src/pod/fast/pod-delete.yaml" "$stage/"
	chmod -R u+w "$stage"
	log "kwok: stage files in $stage"
}

# real_moto_server resolves a pyenv shim to the script it runs.
real_moto_server() {
	local server="$1"
	if [[ "$server" == */shims/* ]] && command -v pyenv >/dev/null; then
		pyenv which moto_server 2>/dev/null && return
	fi
	printf '%s\n' "$server"
}

# moto_version_of prints the moto version behind a moto_server script, or nothing.
moto_version_of() {
	local server="$1" py
	py="$(head -n1 "$server" | sed -n 's/^#! *//p' | cut -d' ' -f1)"
	if [[ "$(basename "${py:-x}")" != python* || ! -x "$py" ]]; then
		py="$(command -v python3 || true)"
	fi
	if [[ -n "$py" ]]; then "$py" -c 'import moto; print(moto.__version__)' 2>/dev/null || true; fi
}

ensure_moto() {
	local server have
	server="$(command -v moto_server || true)"
	if [[ -n "$server" ]]; then
		server="$(real_moto_server "$server")"
		have="$(moto_version_of "$server")"
		if [[ "$have" == "$moto_version" ]]; then
			ln -sfn "$server" "$tools/bin/moto_server"
			log "moto: $server is moto $have"
			return
		fi
		log "moto: $server is moto '${have:-unknown}', want $moto_version"
	else
		log "moto: no moto_server on PATH"
	fi
	log "moto: installing moto[server]==$moto_version with pip"
	if ! python3 -m pip install --quiet "moto[server]==$moto_version"; then
		echo "tools: moto $moto_version is missing: no moto_server $moto_version on PATH and 'pip install moto[server]==$moto_version' failed" >&2
		exit 1
	fi
	hash -r
	server="$(command -v moto_server || true)"
	[[ -n "$server" ]] && server="$(real_moto_server "$server")"
	have="$( [[ -n "$server" ]] && moto_version_of "$server")"
	if [[ "$have" != "$moto_version" ]]; then
		echo "tools: moto $moto_version is missing: after pip install, moto_server is '${server:-absent}' at version '${have:-unknown}'" >&2
		exit 1
	fi
	ln -sfn "$server" "$tools/bin/moto_server"
	log "moto: installed $server ($have)"
}

# real_cfn_lint resolves a pyenv shim to the script it runs.
real_cfn_lint() {
	if [[ "$1" == */shims/* ]] && command -v pyenv >/dev/null; then
		pyenv which cfn-lint 2>/dev/null && return
	fi
	printf '%s\n' "$1"
}

# cfn_lint_version_of prints the version of a cfn-lint executable, or nothing.
cfn_lint_version_of() {
	"$1" --version 2>/dev/null | sed -n 's/^cfn-lint \([0-9.]*\)$/\1/p' | head -n1
}

# ensure_cfn_lint links cfn-lint $cfn_lint_version into bin/, installing it
# with pip when PATH has no such version.
ensure_cfn_lint() {
	local lint have
	lint="$(command -v cfn-lint || true)"
	if [[ -n "$lint" ]]; then
		lint="$(real_cfn_lint "$lint")"
		have="$(cfn_lint_version_of "$lint")"
		if [[ "$have" == "$cfn_lint_version" ]]; then
			ln -sfn "$lint" "$tools/bin/cfn-lint"
			log "cfn-lint: $lint is cfn-lint $have"
			return
		fi
		log "cfn-lint: $lint is cfn-lint '${have:-unknown}', want $cfn_lint_version"
	else
		log "cfn-lint: no cfn-lint on PATH"
	fi
	log "cfn-lint: installing cfn-lint==$cfn_lint_version with pip"
	if ! python3 -m pip install --quiet "cfn-lint==$cfn_lint_version"; then
		echo "tools: cfn-lint $cfn_lint_version is missing: no cfn-lint $cfn_lint_version on PATH and 'pip install cfn-lint==$cfn_lint_version' failed; install it (python3 -m pip install cfn-lint==$cfn_lint_version) and run make tools again" >&2
		exit 1
	fi
	hash -r
	lint="$(command -v cfn-lint || true)"
	[[ -n "$lint" ]] && lint="$(real_cfn_lint "$lint")"
	have="$( [[ -n "$lint" ]] && cfn_lint_version_of "$lint")"
	if [[ "$have" != "$cfn_lint_version" ]]; then
		echo "tools: cfn-lint $cfn_lint_version is missing: after pip install, cfn-lint is '${lint:-absent}' at version '${have:-unknown}'" >&2
		exit 1
	fi
	ln -sfn "$lint" "$tools/bin/cfn-lint"
	log "cfn-lint: installed $lint ($have)"
}

# chromium_path prints the path of a Chromium executable, or nothing.
chromium_path() {
	local c
	for c in chromium chromium-browser; do
		command -v "$c" 2>/dev/null && return
	done
	[[ -x /usr/bin/chromium ]] && echo /usr/bin/chromium
	return 0
}

# ensure_chromium links Chromium into bin/ for the report render test,
# installing Debian's chromium package with apt-get when it is missing. It
# never fails the build: without apt (or root) it says what is missing and
# the render test fails with the same words.
ensure_chromium() {
	local c
	c="$(chromium_path)"
	if [[ -z "$c" ]]; then
		local apt=(apt-get)
		if [[ $(id -u) -ne 0 ]]; then
			if sudo -n true 2>/dev/null; then apt=(sudo -n apt-get); else apt=(); fi
		fi
		if [[ ${#apt[@]} -eq 0 ]] || ! command -v apt-get >/dev/null; then
			log "chromium: missing, and apt-get cannot run here (not root, no sudo, or no apt); the report render test (test/report) will fail until Debian's chromium is installed: apt-get install -y chromium"
			return 0
		fi
		log "chromium: missing; installing Debian's chromium with apt-get (about 100 MB, a minute or two)"
		if ! DEBIAN_FRONTEND=noninteractive "${apt[@]}" install -y --no-install-recommends chromium 2>&1 | sed -u 's/^/    apt: /'; then
			log "chromium: apt-get install failed; refreshing the package lists (apt-get update) and trying again"
			DEBIAN_FRONTEND=noninteractive "${apt[@]}" update 2>&1 | sed -u 's/^/    apt: /' || true
			DEBIAN_FRONTEND=noninteractive "${apt[@]}" install -y --no-install-recommends chromium 2>&1 | sed -u 's/^/    apt: /' || true
		fi
		c="$(chromium_path)"
		if [[ -z "$c" ]]; then
			log "chromium: could not be installed with apt-get; the report render test (test/report) will fail until it is: apt-get install -y chromium"
			return 0
		fi
	fi
	ln -sfn "$c" "$tools/bin/chromium"
	log "chromium: $c ($("$c" --version 2>/dev/null | head -n1))"
}

main() {
	local start=$SECONDS
	log "into $tools"
	ensure_moto
	ensure_cfn_lint
	ensure_chromium
	build_etcd
	build_kwok
	build_kube
	log "all tools ready in $((SECONDS - start))s"
}

main
