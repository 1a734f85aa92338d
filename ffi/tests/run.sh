#!/usr/bin/env bash
# The C ABI's checks, run by scripts/test.sh (step c_abi):
#   1. the committed header equals what cbindgen generates from ffi/src;
#   2. the shared library exports commcore_* symbols only;
#   3. the C programs in ffi/tests pass under AddressSanitizer and UBSan;
#   4. every ```c example in the header's doc comments compiles;
#   5. scripts/install-c.sh installs a tree that pkg-config builds against (shared and static).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cflags=(-std=c11 -Wall -Wextra -Werror -g)
sanitize=(-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)

cargo build --release --locked -q -p commcore-ffi
lib=target/release/libcommcore.so

echo "c_abi: header is generated from ffi/src (cbindgen $(cbindgen --version | cut -d' ' -f2))"
(cd ffi && cbindgen --quiet --config cbindgen.toml --output "$tmp/commcore.h")
if ! diff -u ffi/include/commcore.h "$tmp/commcore.h"; then
    echo "ffi/include/commcore.h is stale: run (cd ffi && cbindgen --config cbindgen.toml --output include/commcore.h)" >&2
    exit 1
fi

echo "c_abi: exports"
exports=$(nm -D --defined-only "$lib" | awk '{ print $NF }')
others=$(grep -v '^commcore_' <<<"$exports" || true)
if [ -n "$others" ]; then
    echo "libcommcore.so exports symbols outside commcore_*:" >&2
    echo "$others" >&2
    exit 1
fi
echo "  $(wc -l <<<"$exports") symbols, all commcore_*; $(stat -c %s "$lib") bytes"

echo "c_abi: C tests under ASan+UBSan"
link=(-Iffi/include -L"$root/target/release" -lcommcore -Wl,-rpath,"$root/target/release")
cc "${cflags[@]}" "${sanitize[@]}" ffi/tests/api.c "${link[@]}" -o "$tmp/api"
timeout 120 "$tmp/api"
cc "${cflags[@]}" "${sanitize[@]}" ffi/tests/threads.c "${link[@]}" -lpthread -o "$tmp/threads"
for n in 3 4 5 8; do timeout 120 "$tmp/threads" "$n"; done

echo "c_abi: the header's examples compile"
awk -v dir="$tmp" '
    /^ *\* ```c$/ { n++; file = dir "/example" n ".c"; inside = 1; next }
    /^ *\* ```$/ { inside = 0; close(file); next }
    inside { sub(/^ *\* ?/, ""); print > file }
    END { print n > (dir "/examples") }
' ffi/include/commcore.h
count=$(cat "$tmp/examples")
[ "$count" -gt 0 ] || { echo "no examples found in the header" >&2; exit 1; }
for i in $(seq 1 "$count"); do
    cc "${cflags[@]}" -Iffi/include -c "$tmp/example$i.c" -o "$tmp/example$i.o"
done
echo "  $count examples"

echo "c_abi: install-c.sh and pkg-config"
scripts/install-c.sh "$tmp/prefix" >/dev/null
export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig"
# shellcheck disable=SC2046
cc "${cflags[@]}" ffi/tests/api.c $(pkg-config --cflags --libs commcore) -o "$tmp/api-installed"
"$tmp/api-installed" >/dev/null
# shellcheck disable=SC2046
cc "${cflags[@]}" ffi/tests/api.c $(pkg-config --cflags commcore) "$tmp/prefix/lib/libcommcore.a" \
    $(pkg-config --libs-only-l --static commcore | sed 's/-lcommcore//') -o "$tmp/api-static"
"$tmp/api-static" >/dev/null
echo "  shared and static builds through pkg-config run"
echo "c_abi: passed"
