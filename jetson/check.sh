#!/usr/bin/env bash
# The Jetson (aarch64) build, made and checked on an x86_64 Debian 12 machine, from clean.
#
#   sudo jetson/check.sh     # about 35 min on 2 busy cores from clean (docs/JETSON.md)
#
# 1. installs the cross toolchain (docs/JETSON.md; Debian's rustc-web and its arm64 std, gcc
#    for aarch64, qemu-user-static) and cargo-deb, unless already there;
# 2. cross-builds the workspace's binaries (release) for aarch64-unknown-linux-gnu, under
#    `nice -n 19`, into target/cross (CROSS_TARGET_DIR to change);
# 3. runs them under qemu (QEMU_CPU=cortex-a76, the closest to Orin's Cortex-A78AE):
#    `seqgpt --version`, `--help` of all three, the tiny fixture converted to q8_0 and a
#    greedy generate from it;
# 4. runs the test suite (lib, bins, integration tests) built for aarch64 under qemu;
# 5. builds the arm64 .deb with cargo-deb, prints `dpkg-deb -I`, unpacks it into a scratch
#    root and checks: architecture, dependencies against what the binaries link, conffiles,
#    maintainer scripts, ELF machine, stripped binaries that still run, their debug info in
#    the -dbgsym package, and the file layout against systemd/install.sh's.
# Prints the time of each step. Exits non-zero on the first failure.
# Environment: CROSS_TARGET_DIR, SKIP_TESTS=1 (skip step 4), NICE (default 19).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
target=aarch64-unknown-linux-gnu
td=${CROSS_TARGET_DIR:-$top/target/cross}
bin=$td/$target/release
nice_level=${NICE:-19}
cargo_deb_version=3.8.0
qemu="qemu-aarch64-static"
export QEMU_CPU=cortex-a76
# Test binaries that start other programs start them under qemu too (no binfmt_misc here).
export SEQGPT_TEST_RUNNER=$qemu
# Debian's rustc for the aarch64 builds: its arm64 std was built by it (rustup cannot download
# one here). cargo itself, and cargo-deb's own build, stay with rustup's toolchain.
cross_cargo() { RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc nice -n "$nice_level" cargo "$@"; }

start=$(date +%s)
step_start=$start
timings=()
step() {
    local now
    now=$(date +%s)
    [ -n "${step_name:-}" ] && timings+=("$(printf '%-34s %5d s' "$step_name" $((now - step_start)))")
    step_name=$1
    step_start=$now
    printf '\n== %s\n' "$1"
}
fail() { echo "FAIL: $*" >&2; exit 1; }
under_qemu() { "$qemu" "$@"; }

# --- 1. toolchain ---------------------------------------------------------------------------
step "toolchain (apt, cargo-deb)"
packages=(rustc-web libstd-rust-web-dev:arm64 gcc-aarch64-linux-gnu g++-aarch64-linux-gnu
    libc6-dev-arm64-cross qemu-user-static)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    [ "$(id -u)" = 0 ] || fail "missing ${missing[*]}: run as root, or install them (docs/JETSON.md)"
    dpkg --add-architecture arm64
    apt-get update -q
    # One command: rustc-web and its arm64 std must have the same version.
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${packages[@]}"
fi
rustc_version=$(dpkg-query -W -f='${Version}' rustc-web)
std_version=$(dpkg-query -W -f='${Version}' libstd-rust-web-dev:arm64)
[ "$rustc_version" = "$std_version" ] ||
    fail "rustc-web $rustc_version and libstd-rust-web-dev:arm64 $std_version differ: reinstall both in one apt command"
echo "rustc: $(/usr/bin/rustc --version); qemu: $($qemu --version | head -n 1)"
if ! cargo deb --version 2>/dev/null | grep -qF "$cargo_deb_version"; then
    cargo install cargo-deb --version "$cargo_deb_version" --locked
fi
echo "cargo-deb: $(cargo deb --version)"

# --- 2. build -------------------------------------------------------------------------------
step "cross build (release, nice $nice_level)"
# A fresh clone has no target folder yet: the redirect below needs it.
mkdir -p "$td"
cross_cargo build --release --workspace --bins --target "$target" --target-dir "$td" \
    --message-format=json-render-diagnostics >"$td/artifacts.json"
# Binaries this build made (or found fresh), not whatever an older tree left in target/cross.
binaries=(seqgptd seqgpt seqgpt-quantize)
for b in "${binaries[@]}"; do
    grep -qF "\"executable\":\"$bin/$b\"" "$td/artifacts.json" ||
        fail "this tree builds no binary $b (is its [[bin]] in the tree yet?)"
done

# --- 3. run under qemu ----------------------------------------------------------------------
step "run under qemu"
under_qemu "$bin/seqgpt" --version
for b in "${binaries[@]}"; do
    under_qemu "$bin/$b" --help >/dev/null || fail "$b --help under qemu"
    echo "$b --help: ok"
done
# The tiny fixture converted by the aarch64 converter, then generated from (greedy): the
# same tokens as the x86_64 build's, since both run the same arithmetic on the same file.
fixture=$td/tiny-q8_0.gguf
under_qemu "$bin/seqgpt-quantize" --model tests/fixtures/tiny --out "$fixture" --wtype q8_0 ||
    fail "seqgpt-quantize under qemu"
out=$(under_qemu "$bin/seqgpt" generate --model "$fixture" --device cpu --prompt "Vim is a very powerful editor" \
      --max-new-tokens 8 --greedy --ignore-eos --json) ||
    fail "seqgpt generate under qemu (if its flags changed, update jetson/check.sh)"
[ -n "$out" ] || fail "seqgpt generate printed nothing"
echo "generate (aarch64, q8_0 tiny model): $out"

# --- 4. tests under qemu --------------------------------------------------------------------
if [ "${SKIP_TESTS:-0}" != 1 ]; then
    step "test suite under qemu"
    # The runner (qemu) comes from .cargo/config.toml. Doc tests are left out: they would
    # need rustdoc to cross-compile and run each example.
    # --no-fail-fast: every failing suite in one run (a cross test run is long).
    cross_cargo test --release --workspace --tests --no-fail-fast --target "$target" --target-dir "$td"
    # The kernels' exactness tests again with CI=1, under which a CPU without the NEON
    # dot-product kernels fails them instead of skipping: they ran, on the Orin's kernels.
    CI=1 cross_cargo test --release -p seqgpt-engine --lib --target "$target" --target-dir "$td" -- kernels::
fi

# --- 5. the .deb ----------------------------------------------------------------------------
step "package (cargo-deb) and inspect"
rm -rf "$td/debian"
# --dbgsym: stripped binaries in the package, their debug info (line tables, for backtraces
# and core dumps) in seqgpt-fast-dbgsym_*.ddeb, found by build id.
CARGO_TARGET_DIR=$td cargo deb -p seqgpt-fast --target "$target" --no-build --dbgsym --output "$td/debian/"
deb=$(find "$td/debian" -maxdepth 1 -name 'seqgpt-fast_*_arm64.deb' | head -n 1)
ddeb=$(find "$td/debian" -maxdepth 1 -name 'seqgpt-fast-dbgsym_*_arm64.ddeb' | head -n 1)
[ -n "$deb" ] || fail "no arm64 .deb in $td/debian"
[ -n "$ddeb" ] || fail "no arm64 dbgsym .ddeb in $td/debian"
echo "$deb ($(du -h "$deb" | cut -f1)); $ddeb ($(du -h "$ddeb" | cut -f1))"
dpkg-deb -I "$deb"

[ "$(dpkg-deb -f "$deb" Architecture)" = arm64 ] || fail "Architecture is not arm64"
depends=$(dpkg-deb -f "$deb" Depends)
for d in dbus systemd libgcc-s1; do
    echo "$depends" | grep -qw -- "$d" || fail "Depends lacks $d: $depends"
done

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
dpkg-deb -x "$deb" "$scratch/deb"
dpkg-deb -x "$ddeb" "$scratch/dbgsym"
dpkg-deb -e "$deb" "$scratch/control"
for s in postinst prerm postrm; do
    [ -x "$scratch/control/$s" ] || fail "maintainer script $s missing"
done
grep -qxF /etc/seqgpt/seqgptd.toml "$scratch/control/conffiles" || fail "config is not a conffile"

# What the binaries need from the system, against Depends: every NEEDED library comes from
# libc6 or libgcc-s1, and libc6's minimum version covers the newest GLIBC_ symbol used.
readelf=aarch64-linux-gnu-readelf
glibc_needed=0
for b in "${binaries[@]}"; do
    f=$scratch/deb/usr/bin/$b
    "$readelf" -h "$f" | grep -q 'Machine:.*AArch64' || fail "$b is not an AArch64 ELF"
    if "$readelf" -W -S "$f" | grep -qE '\.debug_(info|line)'; then fail "$b is not stripped"; fi
    id=$("$readelf" -n "$f" | sed -n 's/.*Build ID: *\([0-9a-f]*\).*/\1/p')
    [ -s "$scratch/dbgsym/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug" ] ||
        fail "the dbgsym package has no debug file for $b (build id $id)"
    under_qemu "$f" --help >/dev/null || fail "the packaged $b does not run"
    for lib in $("$readelf" -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
        case $lib in
            libc.so.6 | libm.so.6 | libdl.so.2 | libpthread.so.0 | librt.so.1 | ld-linux-aarch64.so.1) ;;
            libgcc_s.so.1) ;;
            *) fail "$b needs $lib, which Depends does not provide" ;;
        esac
    done
    v=$("$readelf" -V "$f" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -n 1)
    echo "$b: AArch64, NEEDED $("$readelf" -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')newest symbol GLIBC_$v"
    if dpkg --compare-versions "$v" gt "$glibc_needed"; then glibc_needed=$v; fi
done
declared=$(echo "$depends" | sed -n 's/.*libc6 (>= \([0-9.]*\)).*/\1/p')
[ -n "$declared" ] || fail "Depends has no versioned libc6"
dpkg --compare-versions "$declared" ge "$glibc_needed" ||
    fail "Depends says libc6 (>= $declared) but the binaries use GLIBC_$glibc_needed"
echo "Depends: $depends (binaries need glibc >= $glibc_needed; JetPack 6 has 2.35)"

# The same layout as systemd/install.sh, which stages from the same build.
"$top/systemd/install.sh" --root "$scratch/staged" --build-dir "$bin" >/dev/null
(cd "$scratch/deb" && find . -type f | sed 's|^\./||' | grep -v '^usr/share/doc/seqgpt-fast/\(copyright\|changelog\)' | sort) >"$scratch/deb.list"
(cd "$scratch/staged" && find . -type f | sed 's|^\./||' | sort) >"$scratch/staged.list"
diff -u "$scratch/staged.list" "$scratch/deb.list" || fail "the .deb's files differ from install.sh's"
echo "layout (same as systemd/install.sh):"
sed 's/^/  \//' "$scratch/deb.list"
grep -v '^usr/bin/' "$scratch/deb.list" | while read -r f; do
    case $f in
        # Two gzips of the same page differ in their bytes: compare what they hold.
        *.gz) cmp -s <(zcat "$scratch/deb/$f") <(zcat "$scratch/staged/$f") ;;
        *) cmp -s "$scratch/deb/$f" "$scratch/staged/$f" ;;
    esac || fail "$f differs between the .deb and install.sh"
done

step "done"
echo
echo "== summary"
printf '%s\n' "${timings[@]}"
printf '%-34s %5d s\n' total $(($(date +%s) - start))
echo "package: $deb"
echo "PASS"
