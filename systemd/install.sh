#!/bin/sh
# Install seqgpt-fast on a systemd Linux machine from a cargo build, without a package manager.
#
#   cargo build --release --workspace            # or: --features cuda (see docs/JETSON.md)
#   sudo systemd/install.sh [--build-dir target/release] [--cuda] [--no-start]
#   sudo systemd/install.sh --uninstall          # keeps /etc/seqgpt and /var/lib/seqgpt
#   systemd/install.sh --root /tmp/stage ...     # only lay the files out under a staging root
#
# It installs the same files, at the same places, as the Debian package (Cargo.toml's
# [package.metadata.deb]; jetson/check.sh compares the two layouts), then does what the
# package's maintainer scripts do: create the seqgpt user and groups (systemd-sysusers), reload
# systemd and D-Bus, enable and start seqgptd.service. An existing /etc/seqgpt/seqgptd.toml is
# kept; the new default goes next to it as seqgptd.toml.new when the two differ.
# --cuda adds the drop-in systemd/seqgptd.service.d/cuda.conf for a CUDA build on a Jetson.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
build_dir=$top/target/release
root=/
cuda=0
start=1
action=install

usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
while [ $# -gt 0 ]; do
    case $1 in
        --build-dir) build_dir=${2:?--build-dir needs a directory}; shift ;;
        --root) root=${2:?--root needs a directory}; shift ;;
        --cuda) cuda=1 ;;
        --no-start) start=0 ;;
        --uninstall) action=uninstall ;;
        -h|--help) usage 0 ;;
        *) echo "install.sh: unknown argument '$1'" >&2; usage 2 >&2 ;;
    esac
    shift
done
root=${root%/}
live=0
[ -z "$root" ] && live=1

# source (relative to the repository) | destination (relative to the root) | mode
# Keep in step with [package.metadata.deb] assets in Cargo.toml.
files() {
    cat <<EOF
BUILD/seqgptd|usr/bin/seqgptd|0755
BUILD/seqgpt|usr/bin/seqgpt|0755
BUILD/seqgpt-quantize|usr/bin/seqgpt-quantize|0755
systemd/seqgptd.service|usr/lib/systemd/system/seqgptd.service|0644
systemd/user/seqgptd.service|usr/lib/systemd/user/seqgptd.service|0644
systemd/seqgpt.sysusers|usr/lib/sysusers.d/seqgpt.conf|0644
systemd/dbus/system-services/org.seqgpt.Summarizer1.service|usr/share/dbus-1/system-services/org.seqgpt.Summarizer1.service|0644
systemd/dbus/services/org.seqgpt.Summarizer1.service|usr/share/dbus-1/services/org.seqgpt.Summarizer1.service|0644
systemd/dbus/system.d/org.seqgpt.Summarizer1.conf|usr/share/dbus-1/system.d/org.seqgpt.Summarizer1.conf|0644
docs/OPERATIONS.md|usr/share/doc/seqgpt-fast/OPERATIONS.md|0644
docs/JETSON.md|usr/share/doc/seqgpt-fast/JETSON.md|0644
docs/DBUS.md|usr/share/doc/seqgpt-fast/DBUS.md|0644
systemd/dbus/interfaces/org.seqgpt.Summarizer1.xml|usr/share/dbus-1/interfaces/org.seqgpt.Summarizer1.xml|0644
examples/summarize_gdbus.c|usr/share/doc/seqgpt-fast/examples/summarize_gdbus.c|0644
examples/summarize_gio.py|usr/share/doc/seqgpt-fast/examples/summarize_gio.py|0644
examples/summarize_client.rs|usr/share/doc/seqgpt-fast/examples/summarize_client.rs|0644
EOF
    # Man pages (gzipped, as in the package) and completions, generated from the command
    # lines (tests/cli_docs.rs).
    for f in "$top"/docs/man/*.1; do echo "docs/man/${f##*/}|usr/share/man/man1/${f##*/}.gz|0644"; done
    for f in "$top"/docs/man/*.8; do echo "docs/man/${f##*/}|usr/share/man/man8/${f##*/}.gz|0644"; done
    for f in "$top"/docs/completions/bash/*; do echo "docs/completions/bash/${f##*/}|usr/share/bash-completion/completions/${f##*/}|0644"; done
    for f in "$top"/docs/completions/zsh/*; do echo "docs/completions/zsh/${f##*/}|usr/share/zsh/vendor-completions/${f##*/}|0644"; done
    for f in "$top"/docs/completions/fish/*; do echo "docs/completions/fish/${f##*/}|usr/share/fish/vendor_completions.d/${f##*/}|0644"; done
}
config_src=$top/systemd/seqgptd.toml
config_dst=$root/etc/seqgpt/seqgptd.toml
cuda_src=$top/systemd/seqgptd.service.d/cuda.conf
cuda_dst=$root/etc/systemd/system/seqgptd.service.d/cuda.conf

if [ "$live" = 1 ] && [ "$(id -u)" != 0 ]; then
    echo "install.sh: run as root (or use --root DIR to stage the files)" >&2
    exit 1
fi

if [ "$action" = uninstall ]; then
    if [ "$live" = 1 ]; then
        if [ -d /run/systemd/system ]; then systemctl stop seqgptd.service 2>/dev/null || true; fi
        systemctl disable seqgptd.service 2>/dev/null || true
    fi
    files | while IFS='|' read -r _src dst _mode; do rm -f "$root/$dst"; done
    rm -f "$cuda_dst"
    rmdir "$root/etc/systemd/system/seqgptd.service.d" "$root/usr/share/doc/seqgpt-fast/examples" \
        "$root/usr/share/doc/seqgpt-fast" 2>/dev/null || true
    if [ "$live" = 1 ] && [ -d /run/systemd/system ]; then
        systemctl daemon-reload
    fi
    echo "Removed seqgpt-fast. Kept: /etc/seqgpt (config), /var/lib/seqgpt and /var/cache/seqgpt"
    echo "(models, summary cache) and the seqgpt user; remove them by hand if wanted."
    exit 0
fi

for bin in seqgptd seqgpt seqgpt-quantize; do
    if [ ! -x "$build_dir/$bin" ]; then
        echo "install.sh: $build_dir/$bin is missing: build first (cargo build --release --workspace)" >&2
        exit 1
    fi
done

files | while IFS='|' read -r src dst mode; do
    case $src in BUILD/*) src=$build_dir/${src#BUILD/} ;; *) src=$top/$src ;; esac
    if [ "${dst%.gz}" != "$dst" ] && [ "${src%.gz}" = "$src" ]; then
        # A man page: installed gzipped, as the package has it.
        install -d "$(dirname "$root/$dst")"
        gzip -9n -c "$src" >"$root/$dst"
        chmod "$mode" "$root/$dst"
    else
        install -D -m "$mode" "$src" "$root/$dst"
    fi
done

mkdir -p "$(dirname "$config_dst")"
if [ ! -e "$config_dst" ]; then
    install -m 0644 "$config_src" "$config_dst"
elif ! cmp -s "$config_src" "$config_dst"; then
    install -m 0644 "$config_src" "$config_dst.new"
    echo "Kept your $config_dst; the new default is $config_dst.new"
fi

if [ "$cuda" = 1 ]; then
    install -D -m 0644 "$cuda_src" "$cuda_dst"
fi

if [ "$live" = 0 ]; then
    echo "Staged seqgpt-fast under $root"
    exit 0
fi

systemd-sysusers /usr/lib/sysusers.d/seqgpt.conf
running=0
[ -d /run/systemd/system ] && running=1
if [ "$running" = 1 ]; then
    systemctl daemon-reload
    # dbus-daemon watches its directories; an explicit reload also covers dbus-broker.
    busctl call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus ReloadConfig \
        >/dev/null 2>&1 || systemctl reload dbus.service 2>/dev/null || true
fi
systemctl enable seqgptd.service
if [ "$running" = 0 ]; then
    echo "systemd is not running here: seqgptd starts at the next boot"
elif [ "$start" = 1 ]; then
    systemctl restart seqgptd.service
    systemctl --no-pager --lines=0 status seqgptd.service || true
fi
echo "Installed seqgpt-fast. Model: put the GGUF file at the path in $config_dst"
echo "(default /var/lib/seqgpt/models/seqgpt-560m-q4.gguf, readable by user seqgpt); callers on"
echo "the system bus: root and members of seqgpt-users (usermod -aG seqgpt-users NAME)."
