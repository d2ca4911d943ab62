#!/usr/bin/env bash
# Offline checks of the systemd units, the D-Bus files and the accounts they need (CI: .ci/run).
#
#   tests/ops/check_units.sh [BUILD_DIR]
#
# Needs: bash, coreutils, util-linux (setpriv) and systemd >= 250 for
# `systemd-analyze verify --root` and `security --offline` (Debian 12: apt-get install systemd).
# Optional: dbus-daemon and dbus-send (Debian 12: apt-get install dbus-daemon dbus-bin); without
# them the bus-policy checks say SKIP. Installs nothing, needs no running systemd, no network.
# Run as root for the policy checks (they connect as other users); otherwise they say SKIP.
#
# It stages the install (systemd/install.sh --root) with the binaries of BUILD_DIR (for example
# target/release), or with stand-in executables when none is given, since only the paths
# matter to the checks. It then checks:
#   0. that the .deb's assets (Cargo.toml) and install.sh lay out the same files;
#   1. systemd-analyze verify: the system unit, the same with the CUDA drop-in, the user unit;
#   2. the settings the units must have (Type=notify, watchdog, reload, sandbox, resources, ...);
#   3. systemd-analyze security --offline=true: exposure <= 2.0 (printed), also with the drop-in;
#   4. the D-Bus activation files; 5. the sysusers.d file, applied to a copy of the accounts;
#   6. the system bus policy on a private dbus-daemon: who may own the name, who may call it,
#      and that activation finds the files.
# Exits non-zero on the first failure.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
max_exposure=2.0
name=org.seqgpt.Summarizer1
work=$(mktemp -d)
bus_pid=
cleanup() {
    [ -n "$bus_pid" ] && kill "$bus_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok   $*"; }
skip() { echo "SKIP $*"; }

command -v systemd-analyze >/dev/null || fail "systemd-analyze not found (apt-get install systemd)"
echo "systemd-analyze: $(systemd-analyze --version | head -n 1)"

# --- stage the installation -------------------------------------------------------------
build=${1:-}
if [ -z "$build" ]; then
    build=$work/bin
    mkdir -p "$build"
    for b in seqgptd seqgpt seqgpt-quantize; do
        printf '#!/bin/sh\nexit 0\n' >"$build/$b"
        chmod 755 "$build/$b"
    done
    echo "binaries: stand-ins (pass a build directory to use real ones)"
else
    echo "binaries: $build"
fi
root=$work/root
cuda_root=$work/root-cuda
"$top/systemd/install.sh" --root "$root" --build-dir "$build" >/dev/null
"$top/systemd/install.sh" --root "$cuda_root" --build-dir "$build" --cuda >/dev/null
unit=usr/lib/systemd/system/seqgptd.service
user_unit=usr/lib/systemd/user/seqgptd.service

# --- 0. the package's files are install.sh's ------------------------------------------------
# jetson/check.sh compares the built .deb with the staged tree; this compares the lists, so
# that a file added to one and not the other fails in CI already.
python3 - "$top/Cargo.toml" "$root" <<'PY' || fail "Cargo.toml's deb assets and systemd/install.sh differ"
import glob, os, sys, tomllib
meta = tomllib.load(open(sys.argv[1], "rb"))["package"]["metadata"]["deb"]
top = os.path.dirname(sys.argv[1])
deb = set()
for src, dst, _mode in meta["assets"]:
    # cargo-deb expands globs; the binaries are built, not in the tree.
    sources = [src] if src.startswith("target/") else [os.path.relpath(p, top) for p in glob.glob(os.path.join(top, src))]
    if not sources:
        print("no file matches the asset", src, file=sys.stderr)
        sys.exit(1)
    for s in sources:
        path = dst + os.path.basename(s) if dst.endswith("/") else dst
        # cargo-deb gzips man pages, as Debian policy asks.
        if path.startswith("usr/share/man/") and not path.endswith(".gz"):
            path += ".gz"
        deb.add(path)
staged = set()
for d, _, files in os.walk(sys.argv[2]):
    for f in files:
        staged.add(os.path.relpath(os.path.join(d, f), sys.argv[2]))
if deb != staged:
    print("only in the .deb:", sorted(deb - staged), "only in install.sh:", sorted(staged - deb), file=sys.stderr)
    sys.exit(1)
PY
ok "the .deb's assets and systemd/install.sh install the same $(find "$root" -type f | wc -l) files"

# ExecReload runs the system's /bin/kill (procps), which the staged roots lack.
for r in "$root" "$cuda_root"; do
    mkdir -p "$r/bin"
    printf '#!/bin/sh\nexit 0\n' >"$r/bin/kill"
    chmod 755 "$r/bin/kill"
done

# --- 1. verify --------------------------------------------------------------------------
# --recursive-errors=no: dbus.socket and the targets are not part of the staged root.
verify() {
    local label=$1 r=$2 file=$3 out
    if ! out=$(cd "$r" && systemd-analyze verify --man=no --recursive-errors=no --root="$r" "$file" 2>&1) \
        || [ -n "$out" ]; then
        echo "$out" >&2
        fail "systemd-analyze verify: $label"
    fi
    ok "verify $label"
}
verify "seqgptd.service" "$root" "$unit"
verify "seqgptd.service + cuda.conf" "$cuda_root" "$unit"
# A user unit cannot be verified offline under --root (systemd 252); verifying it as a unit
# file still checks every key, value and the ExecStart path.
verify "user/seqgptd.service" "$root" "$user_unit"

# --- 2. the settings asked for ----------------------------------------------------------
need() {
    local file=$1 line=$2
    grep -qxF -- "$line" "$root/$file" || fail "$file lacks '$line'"
}
for line in Type=notify NotifyAccess=main WatchdogSec=60s Restart=on-failure User=seqgpt \
    "SupplementaryGroups=video render" ProtectSystem=strict ProtectHome=yes PrivateTmp=yes \
    NoNewPrivileges=yes RestrictAddressFamilies=AF_UNIX PrivateNetwork=yes \
    StateDirectory=seqgpt CacheDirectory=seqgpt MemoryHigh=3G MemoryMax=4G Nice=5 CPUWeight=50 \
    MemoryDenyWriteExecute=yes DevicePolicy=closed "BusName=$name" \
    "ExecStart=/usr/bin/seqgptd --bus system --config /etc/seqgpt/seqgptd.toml" \
    'ExecReload=/bin/kill -HUP $MAINPID'; do
    need "$unit" "$line"
done
for line in Type=notify WatchdogSec=60s Restart=on-failure NoNewPrivileges=yes \
    RestrictAddressFamilies=AF_UNIX StateDirectory=seqgpt CacheDirectory=seqgpt \
    MemoryDenyWriteExecute=yes "BusName=$name" \
    "ExecStart=/usr/bin/seqgptd --bus session" 'ExecReload=/bin/kill -HUP $MAINPID'; do
    need "$user_unit" "$line"
done
ok "unit settings (notify, watchdog, restart, user and groups, sandbox, resources)"

# --- 3. exposure --------------------------------------------------------------------------
exposure() {
    local r=$1 out score
    out=$(systemd-analyze security --offline=true --no-pager --root="$r" seqgptd.service 2>&1) || {
        echo "$out" >&2
        fail "systemd-analyze security"
    }
    score=$(echo "$out" | sed -n 's/.*Overall exposure level for seqgptd.service: \([0-9.]*\).*/\1/p')
    [ -n "$score" ] || { echo "$out" >&2; fail "no exposure level in the output"; }
    echo "$score"
}
score=$(exposure "$root")
cuda_score=$(exposure "$cuda_root")
echo "exposure: seqgptd.service $score, with cuda.conf $cuda_score (limit $max_exposure)"
for s in "$score" "$cuda_score"; do
    awk -v s="$s" -v m="$max_exposure" 'BEGIN { exit !(s <= m) }' ||
        fail "exposure $s is above $max_exposure"
done
ok "exposure <= $max_exposure"

# --- 4. D-Bus files ----------------------------------------------------------------------------
sys_act=$root/usr/share/dbus-1/system-services/$name.service
ses_act=$root/usr/share/dbus-1/services/$name.service
policy=$root/usr/share/dbus-1/system.d/$name.conf
for f in "$sys_act" "$ses_act"; do
    grep -qxF "Name=$name" "$f" || fail "$f: Name= is not $name"
    grep -qxF "SystemdService=seqgptd.service" "$f" || fail "$f: SystemdService= is not seqgptd.service"
done
grep -qxF "User=seqgpt" "$sys_act" || fail "$sys_act: User= must match the unit's User=seqgpt"
ok "activation files name $name and seqgptd.service, as user seqgpt"

# --- 5. accounts ----------------------------------------------------------------------------
# systemd-sysusers on a copy of this machine's account files (what the postinst does for real).
accounts=$work/accounts
mkdir -p "$accounts/etc"
for f in passwd group shadow gshadow; do
    [ -r "/etc/$f" ] && cp "/etc/$f" "$accounts/etc/"
done
systemd-sysusers --root="$accounts" "$root/usr/lib/sysusers.d/seqgpt.conf" >/dev/null 2>&1 ||
    fail "systemd-sysusers rejected usr/lib/sysusers.d/seqgpt.conf"
IFS=: read -r _ _ uid gid _ home shell < <(grep '^seqgpt:' "$accounts/etc/passwd") ||
    fail "sysusers created no user seqgpt"
if ! { [ "$uid" -lt 1000 ] && [ "$home" = /var/lib/seqgpt ] && [ "${shell##*/}" = nologin ]; }; then
    fail "seqgpt should be a system user (uid $uid), home /var/lib/seqgpt ($home), no login ($shell)"
fi
[ "$(awk -F: '$1 == "seqgpt" { print $3 }' "$accounts/etc/group")" = "$gid" ] ||
    fail "no group seqgpt matching the user's gid"
for g in seqgpt-users video render; do
    grep -q "^$g:" "$accounts/etc/group" || fail "sysusers created no group $g"
done
ok "sysusers: system user seqgpt (home /var/lib/seqgpt, nologin), groups seqgpt-users, video, render"

# --- 6. the bus policy, on a private bus ---------------------------------------------------
if ! command -v dbus-daemon >/dev/null || ! command -v dbus-send >/dev/null; then
    skip "bus policy on a private dbus-daemon (install dbus-daemon and dbus-bin to run it)"
    echo "PASS (policy checks skipped)"
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    skip "bus policy on a private dbus-daemon (needs root, to connect as other users)"
    echo "PASS (policy checks skipped)"
    exit 0
fi

# The policy as shipped, with its two names mapped onto accounts every Debian system has:
# the daemon's user seqgpt -> daemon; the callers' group seqgpt-users -> nogroup (the primary
# group of nobody). bin is in neither. The default policies are those of Debian's system.conf
# and session.conf.
sed -e 's/user="seqgpt"/user="daemon"/' -e 's/group="seqgpt-users"/group="nogroup"/' \
    "$policy" >"$work/policy.conf"
chmod 755 "$work"
run_bus() { # type, service directory, policy elements
    local type=$1 dir=$2 policy=$3
    cat >"$work/bus.conf" <<EOF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>$type</type>
  <listen>unix:path=$work/bus</listen>
  <auth>EXTERNAL</auth>
  <servicedir>$dir</servicedir>
  $policy
</busconfig>
EOF
    rm -f "$work/bus"
    dbus-daemon --config-file="$work/bus.conf" --nofork --nopidfile 2>"$work/bus.log" &
    bus_pid=$!
    for _ in $(seq 50); do [ -S "$work/bus" ] && break; sleep 0.1; done
    [ -S "$work/bus" ] || { cat "$work/bus.log" >&2; fail "private dbus-daemon did not start"; }
    chmod 666 "$work/bus"
    # (In a container dbus-daemon may fail to raise its fd limit: that line is harmless.)
    if grep -v 'fd limit' "$work/bus.log" | grep -Ei 'error|invalid|unknown|not allowed'; then
        fail "dbus-daemon complained about the configuration"
    fi
}
stop_bus() { kill "$bus_pid"; wait "$bus_pid" 2>/dev/null || true; bus_pid=; }
as() {
    local who=$1
    shift
    if [ "$who" = root ]; then "$@"; else setpriv --reuid="$who" --regid="$(id -g "$who")" --init-groups "$@"; fi
}
error_name() { # a dbus-send failure -> its error name, or the message itself
    local name
    name=$(echo "$1" | sed -n 's/^Error \([A-Za-z.]*\).*/\1/p')
    echo "${name:-$1}"
}
call() { # who -> error name, or "reply"
    local out
    if out=$(as "$1" dbus-send --bus="unix:path=$work/bus" --print-reply --reply-timeout=5000 \
        --dest=$name /org/seqgpt/Summarizer1 org.freedesktop.DBus.Peer.Ping 2>&1); then
        echo reply
    else
        error_name "$out"
    fi
}
own() { # who -> "owned" or the error name
    local out
    if out=$(as "$1" dbus-send --bus="unix:path=$work/bus" --print-reply --dest=org.freedesktop.DBus \
        /org/freedesktop/DBus org.freedesktop.DBus.RequestName string:$name uint32:0 2>&1); then
        echo "$out" | grep -q 'uint32 1' && echo owned || echo "$out"
    else
        error_name "$out"
    fi
}
denied=org.freedesktop.DBus.Error.AccessDenied

system_default='<policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
  </policy>'
session_default='<policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>'

run_bus system "$root/usr/share/dbus-1/system-services" "$system_default
  <include>$work/policy.conf</include>"
[ "$(own daemon)" = owned ] || fail "the daemon's user cannot own $name"
for who in root nobody bin; do
    [ "$(own "$who")" = "$denied" ] || fail "$who may own $name"
done
ok "bus policy: only the daemon's user owns $name"
# Nobody owns the name now, so an allowed call goes on to activation (of the system file,
# whose Exec=/bin/false fails: Spawn.ChildExited), and a refused one stops at the policy.
for who in root nobody; do
    r=$(call "$who")
    [ "$r" = org.freedesktop.DBus.Error.Spawn.ChildExited ] || fail "$who calling $name: got '$r', expected activation"
done
[ "$(call bin)" = "$denied" ] || fail "bin (not in seqgpt-users) may call $name"
ok "bus policy: root and seqgpt-users may call (and activate) $name, others may not"
stop_bus

run_bus session "$root/usr/share/dbus-1/services" "$session_default"
# The session file's Exec= names /usr/bin/seqgptd: where it is not installed the spawn fails,
# where it is the daemon answers; either way activation found the file.
r=$(call root)
case $r in
    org.freedesktop.DBus.Error.Spawn.* | reply) ok "session bus: the activation file is found ($r)" ;;
    *) fail "session activation of $name: got '$r'" ;;
esac
stop_bus
echo "PASS"
