#!/usr/bin/env bash
# Installs what the test suite needs on a Debian 12 machine (root; CI and fresh machines):
# the Rust toolchain is assumed (rustup's stable); Debian packages for the D-Bus, systemd
# and PDF tests. Idempotent: skips what is already there.
set -euo pipefail
need=()
command -v dbus-daemon >/dev/null || need+=(dbus)
command -v systemd-analyze >/dev/null || need+=(systemd)
command -v pdftotext >/dev/null || need+=(poppler-utils)
command -v groff >/dev/null || need+=(groff)
command -v cc >/dev/null || need+=(build-essential)
command -v pkg-config >/dev/null || need+=(pkg-config)
command -v setpriv >/dev/null || need+=(util-linux)
# The reader tests: the annotated copy checked with qpdf and pdftoppm, zathura driven live
# under Xvfb and photographed with xwd and ImageMagick.
command -v qpdf >/dev/null || need+=(qpdf)
command -v Xvfb >/dev/null || need+=(xvfb)
command -v zathura >/dev/null || need+=(zathura)
ls /usr/lib/*/zathura/libpdf-poppler.so >/dev/null 2>&1 || need+=(zathura-pdf-poppler)
command -v xwd >/dev/null || need+=(x11-apps)
[ -x /usr/bin/convert ] || need+=(imagemagick)
# The GPU check's dry run packs the CPU build as for the device: strip, then xz.
command -v strip >/dev/null || need+=(binutils)
command -v xz >/dev/null || need+=(xz-utils)
# The GLib client examples run in the tests: the Python one with Debian's own Python and its
# GObject bindings, the C one built against GLib's development files.
[ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import gi' 2>/dev/null || need+=(python3-gi)
pkg-config --exists gio-unix-2.0 2>/dev/null || need+=(libglib2.0-dev)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "missing packages: ${need[*]} (run as root or install them)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
