#!/usr/bin/env bash
# MPICH's own test suite (test/mpi of a pinned release) against commcore's libmpich.so.12.
#
#   scripts/mpich-tests.sh [--json] [--dirs attr,coll,...] [--expect FILE] [--timeout SECS]
#
# Builds each directory's tests with mpicc.mpich (against Debian's mpi.h, the ABI we serve),
# runs every line of its testlist under `commcore run -n NP` with a timeout, and judges the
# output as MPICH's runtests does: pass when it prints "No Errors" and nothing else and exits
# 0 (or what the line's resultTest asks). A failure is "unsupported" when the output names a
# call this library does not provide yet (MPI_ERR_UNSUPPORTED_OPERATION), else "failed".
# Lines marked strict=false (MPICH extensions) are skipped, as runtests does in strict mode;
# a failing test that scripts/mpich-tests/disputed.txt lists (it asserts what the standard
# does not) is "disputed".
# Prints a table (on stderr with --json) and with --json one object
#   {dir: {passed, unsupported, failed, disputed, skipped, names_failed, names_unsupported}}.
# --expect FILE runs only the tests FILE lists (lines "dir/name NP [ARGS]", as the logs name
# them) and exits 1 unless every one passes: the test command's regression check.
#
# Sources: MPICH_TESTS_SRC=DIR (an MPICH tree or its test/mpi), else MPICH's release tarball
# of version $version as Debian ships its source (the mirror apt uses, which CI reaches),
# downloaded once into target/mpich-tests and checked against a hash of test/mpi's files. Logs: target/mpich-tests/logs/DIR/*.log; every verdict, with its
# exit status and seconds: target/mpich-tests/results.tsv.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=4.0.2
url=http://deb.debian.org/debian/pool/main/m/mpich/mpich_$version.orig.tar.xz
tree_sum=214f8a9d77558c6c027ad2da04dacdffd9ce831f04a4abbecc803cfa2d1ae31b
work=$root/target/mpich-tests
json=0
dirs=attr,coll,comm,datatype,errhan,group,info,init,pt2pt,spawn,topo,threads/pt2pt,threads/comm,threads/init,threads/spawn
# MPICH's tests of erroneous programs, which must get errors
dirs=$dirs,errors/attr,errors/coll,errors/comm,errors/datatype,errors/group,errors/pt2pt,errors/spawn,errors/topo,errors/faults
expect=
timeout_default=90

while [ $# -gt 0 ]; do
    case $1 in
    --json) json=1 ;;
    --dirs) dirs=${2:?--dirs takes a list}; shift ;;
    --expect) expect=${2:?--expect takes a file}; shift ;;
    --timeout) timeout_default=${2:?--timeout takes seconds}; shift ;;
    -h | --help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "mpich-tests.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
if [ -n "$expect" ]; then
    expect=$(cd "$(dirname "$expect")" && pwd)/$(basename "$expect")
    # A test's directory is its name's path less the last part (threads/pt2pt/x: threads/pt2pt).
    dirs=$(grep -v '^#' "$expect" | awk 'NF { print $1 }' | sed 's,/[^/]*$,,' | sort -u | paste -sd,)
fi
# The table goes where the JSON does not.
if [ "$json" = 1 ]; then exec 3>&2; else exec 3>&1; fi

# --- sources -----------------------------------------------------------------------------
src=${MPICH_TESTS_SRC:-}
if [ -n "$src" ] && [ -d "$src/test/mpi" ]; then src=$src/test/mpi; fi
if [ -z "$src" ]; then
    src=$work/mpich-$version/test/mpi
    if [ ! -f "$src/.complete" ]; then
        command -v curl >/dev/null || { apt-get update -qq && apt-get install -y -qq curl; }
        mkdir -p "$work"
        rm -rf "$work/mpich-$version"
        command -v xz >/dev/null || { apt-get update -qq && apt-get install -y -qq xz-utils; }
        curl -fsSL --retry 3 "$url" | tar -xJ -C "$work" "mpich-$version/test/mpi"
        sum=$(cd "$src" && find . -type f | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -d' ' -f1)
        [ "$sum" = "$tree_sum" ] || { echo "mpich-tests.sh: $url: test/mpi differs from the pinned tree ($sum)" >&2; exit 1; }
        touch "$src/.complete"
    fi
fi
[ -f "$src/util/mtest.c" ] || { echo "mpich-tests.sh: no MPICH test/mpi at $src" >&2; exit 1; }

# --- our library and launcher -------------------------------------------------------------
command -v mpicc.mpich >/dev/null ||
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mpich libmpich-dev; }
(cd "$root" && nice -n 10 ffi/mpi/build.sh target/mpi && nice -n 10 cargo build -q -p commcore-cli)
launcher=$root/target/debug/commcore
unsupported_names=$(grep -oE '\<MPI_[A-Za-z0-9_]+' "$root/ffi/mpi/src/unsupported.rs" | sort -u)

# --- the harness: a config header and libmtest -----------------------------------------------
build=$work/build
mkdir -p "$build/include"
# What MPICH's configure finds on Debian with gcc, in strict-MPI mode (no MPIX tests).
cat >"$build/include/mpitestconf.h.new" <<'EOF'
#ifndef MPITESTCONF_H_INCLUDED
#define MPITESTCONF_H_INCLUDED
#define HAVE_STRING_H 1
#define HAVE_STRINGS_H 1
#define HAVE_UNISTD_H 1
#define HAVE_STDARG_H 1
#define HAVE_STDINT_H 1
#define HAVE_SYS_TIME_H 1
#define HAVE_SYS_RESOURCE_H 1
#define HAVE_GETRUSAGE 1
#define HAVE_LONG_DOUBLE 1
#define HAVE_LONG_LONG 1
#define HAVE__BOOL 1
#define HAVE_FLOAT__COMPLEX 1
#define HAVE_DOUBLE__COMPLEX 1
#define HAVE_LONG_DOUBLE__COMPLEX 1
#define USE_LONG_DOUBLE_COMPLEX 1
#define HAVE_MPI_INIT_THREAD 1
#define HAVE_MPI_TYPE_CREATE_STRUCT 1
#define HAVE_MPI2_COMBINERS 1
#define HAVE_MPI_SPAWN 1
#define HAVE_MPI_INTEGER16 1
#define USE_STRICT_MPI 1
#define THREAD_PACKAGE_NAME THREAD_PACKAGE_POSIX
#define POINTERINT_t long
#endif
EOF
printf '#ifndef MTEST_MPIX_H_INCLUDED\n#define MTEST_MPIX_H_INCLUDED\n#endif\n' >"$build/include/mtest_mpix.h"
# dtpools includes "../dtpoolsconf.h", found from -I"$build/include".
printf '#define HAVE_%s_H 1\n' STDLIB STRING LIMITS STDINT SYS_TYPES >"$build/dtpoolsconf.h"
printf '#define HAVE_%s 1\n' STRDUP MEMSET >>"$build/dtpoolsconf.h"
cmp -s "$build/include/mpitestconf.h.new" "$build/include/mpitestconf.h" ||
    { mv "$build/include/mpitestconf.h.new" "$build/include/mpitestconf.h"; rm -f "$build/libmtest.a"; }
rm -f "$build/include/mpitestconf.h.new"
cflags=(-O1 -w -pthread -I"$build/include" -I"$src/include" -I"$src/dtpools/include")
# Two harness libraries, as MPICH builds them: threads/* tests link the threaded one.
if [ ! -f "$build/libmtest.a" ] || [ ! -f "$build/libmtest_thread.a" ]; then
    mkdir -p "$build/obj"
    for file in "$src"/util/{mtest,mtest_common,mtest_single,mtest_thread,dtypes}.c "$src"/dtpools/src/*.c; do
        mpicc.mpich "${cflags[@]}" -c -o "$build/obj/$(basename "$file" .c).o" "$file"
    done
    common=$(ls "$build"/obj/*.o | grep -v -e /mtest_single.o -e /mtest_thread.o)
    # shellcheck disable=SC2086
    ar rcs "$build/libmtest.a" $common "$build/obj/mtest_single.o"
    # shellcheck disable=SC2086
    ar rcs "$build/libmtest_thread.a" $common "$build/obj/mtest_thread.o"
fi

# Prints a directory's test lines, one "NAME NP ARGS<TAB>RESULTTEST<TAB>TIMELIMIT<TAB>SKIP<TAB>ENV"
# (ENV: the line's env= settings as launcher options, or -).
testlist() {
    local list=$src/$1/testlist
    [ -f "$list" ] || list=$list.in
    sed -e 's/@namepub_tests@//' -e '/^@/d' -e 's/#.*//' "$list" | awk '
        NF >= 2 {
            args = ""; result = "-"; limit = "-"; skip = "-"; env = ""
            for (i = 3; i <= NF; i++) {
                split($i, kv, "=")
                value = substr($i, length(kv[1]) + 2)
                if (kv[1] == "arg") args = args " " value
                else if (kv[1] == "resultTest") result = value
                else if (kv[1] == "timeLimit") limit = value
                else if (kv[1] == "strict" && tolower(value) == "false") skip = "strict=false"
                else if (kv[1] == "env") env = env " -x " value
            }
            printf "%s %s%s\t%s\t%s\t%s\t%s\n", $1, $2, args, result, limit, skip, env == "" ? "-" : env
        }'
}

# Builds program $2 of directory $1 from its Makefile.am's sources and flags; 0 when built.
build_prog() {
    local dir=$1 prog=$2 out=$build/$1/$2 am=$src/$1/Makefile.am sources flags extra=()
    local harness=$build/libmtest.a
    case $dir in threads/*) harness=$build/libmtest_thread.a ;; esac
    [ -x "$out" ] && [ "$out" -nt "$harness" ] && return 0
    sources=$(awk -v p="${prog}_SOURCES" '$1 == p { for (i = 3; i <= NF; i++) print $i }' "$am")
    flags=$(awk -v p="${prog}_CPPFLAGS" '$1 == p { for (i = 3; i <= NF; i++) print $i }' "$am" |
        grep -v AM_CPPFLAGS || true)
    [ -n "$sources" ] || sources=$prog.c
    for file in $sources; do extra+=("$src/$dir/$file"); done
    mkdir -p "$build/$dir"
    # shellcheck disable=SC2086
    (cd "$src/$dir" && mpicc.mpich "${cflags[@]}" $flags -o "$out" "${extra[@]}" \
        "$harness" -lm) >"$build/$dir/$prog.build.log" 2>&1
}

# The calls of stdin that this library does not provide yet, on one line.
unprovided() {
    { grep -ohE 'MPI_[A-Za-z0-9_]+' || true; } | sort -u | comm -12 - <(echo "$unsupported_names") | paste -sd' '
}

# Every call not provided yet, preloaded into the ranks: each says so on stderr, then
# calls the library's stub (which reads no argument), so that a test that only checks
# return codes is still seen to use one.
{
    echo '#include <unistd.h>'
    for name in $unsupported_names; do
        printf 'extern int P%s(void);
int %s(void) { static const char m[] = "%s: not provided by commcore yet\\n"; (void)!write(2, m, sizeof m - 1); return P%s(); }\n' \
            "$name" "$name" "$name" "$name"
    done
} >"$build/unprovided.c"
cc -shared -fPIC -w -o "$build/unprovided.so" "$build/unprovided.c"

# Judges one run's output file $1 and status $2 under resultTest $3: 0 when it passed.
judge() {
    local out=$1 status=$2 result=$3
    case $result in
    # runtests' TestStatus stops reading at the first line: both only ask for a failure.
    TestStatus | TestErrFatal) [ "$status" != 0 ] ;;
    *) [ "$status" = 0 ] && grep -qE '^\s*No [Ee]rrors\s*$' "$out" &&
        ! grep -qvE '^\s*(No [Ee]rrors|Test Passed)\s*$' "$out" ;;
    esac
}

disputed_list=$root/scripts/mpich-tests/disputed.txt
declare -A passed unsupported failed disputed skipped names_failed names_unsupported
results=$work/results.tsv
: >"$results"
for dir in ${dirs//,/ }; do
    [ -d "$src/$dir" ] || { echo "mpich-tests.sh: no directory $dir in test/mpi" >&2; exit 2; }
    passed[$dir]=0 unsupported[$dir]=0 failed[$dir]=0 disputed[$dir]=0 skipped[$dir]=0
    names_failed[$dir]= names_unsupported[$dir]=
    mkdir -p "$work/logs/$dir"
    declare -A seen=()
    while IFS=$'\t' read -r line result limit skip env; do
        id="$dir/$line"
        [ -z "${seen[$id]:-}" ] || continue
        seen[$id]=1
        if [ -n "$expect" ] && ! grep -qxF "$id" "$expect"; then continue; fi
        read -r prog np args <<<"$line"
        if [ "$skip" != - ]; then
            skipped[$dir]=$((skipped[$dir] + 1))
            printf '%s\tskipped\t%s\t0\n' "$id" "$skip" >>"$results"
            continue
        fi
        log=$work/logs/$dir/$(tr ' /=,' '____' <<<"$line").log
        verdict=failed started=$SECONDS
        if ! build_prog "$dir" "$prog"; then
            # A call MPICH's mpi.h lacks (an MPIX one): no MPI library can run it.
            cp "$build/$dir/$prog.build.log" "$log"
            status=build verdict=skipped
        else
            limit=$([ "$limit" = - ] && echo "$timeout_default" || echo "$limit")
            [ "$limit" -le "$timeout_default" ] || limit=$timeout_default
            status=0
            [ "$env" != - ] || env=
            # shellcheck disable=SC2086
            (cd "$build/$dir" && nice -n 10 timeout -k 5 $((limit + 15)) "$launcher" run \
                --oversubscribe --timeout "$limit" -x LD_PRELOAD="$build/unprovided.so" $env \
                -n "$np" ./"$prog" $args) >"$log" 2>&1 ||
                status=$?
            if judge "$log" "$status" "$result"; then
                verdict=passed
            else
                calls=$(unprovided <"$log")
                # Or a case of a provided call that is not (or an MPI_ERRORS_RETURN test
                # printing the class): the first such line.
                [ -n "$calls" ] || calls=$(grep -m1 -E 'not provided yet|operation not supported by this library' "$log" || true)
                if [ -n "$calls" ]; then
                    verdict=unsupported
                    names_unsupported[$dir]+="$line: $calls"$'\n'
                elif cut -f1 "$disputed_list" | grep -qxF "$id"; then
                    verdict=disputed
                fi
            fi
        fi
        case $verdict in
        passed) passed[$dir]=$((passed[$dir] + 1)) ;;
        unsupported) unsupported[$dir]=$((unsupported[$dir] + 1)) ;;
        skipped) skipped[$dir]=$((skipped[$dir] + 1)) ;;
        disputed) disputed[$dir]=$((disputed[$dir] + 1)) ;;
        failed) failed[$dir]=$((failed[$dir] + 1)); names_failed[$dir]+="$line (status $status)"$'\n' ;;
        esac
        took=$((SECONDS - started))
        printf '%s\t%s\t%s\t%s\n' "$id" "$verdict" "$status" "$took" >>"$results"
        printf '%-12s %-45s %4ss %s\n' "$verdict" "$id" "$took" "$([ "$status" = 0 ] || echo "status $status")" >&3
    done < <(testlist "$dir")
    unset seen
done

# --- report ---------------------------------------------------------------------------------
printf '\n%-10s %8s %12s %8s %9s %8s\n' directory passed unsupported failed disputed skipped >&3
for dir in ${dirs//,/ }; do
    printf '%-10s %8d %12d %8d %9d %8d\n' "$dir" "${passed[$dir]}" "${unsupported[$dir]}" \
        "${failed[$dir]}" "${disputed[$dir]}" "${skipped[$dir]}" >&3
done
if [ "$json" = 1 ]; then
    for dir in ${dirs//,/ }; do
        jq -n --arg dir "$dir" --argjson p "${passed[$dir]}" --argjson u "${unsupported[$dir]}" \
            --argjson f "${failed[$dir]}" --argjson d "${disputed[$dir]}" --argjson s "${skipped[$dir]}" \
            --arg nf "${names_failed[$dir]}" --arg nu "${names_unsupported[$dir]}" \
            '{($dir): {passed: $p, unsupported: $u, failed: $f, disputed: $d, skipped: $s,
              names_failed: ($nf | split("\n") | map(select(. != ""))),
              names_unsupported: ($nu | split("\n") | map(select(. != "")))}}'
    done | jq -s 'add'
fi
if [ -n "$expect" ]; then
    missing=$(grep -v '^#' "$expect" | grep . | while read -r id; do
        grep -qP "^\Q$id\E\tpassed\t" "$results" || echo "$id"
    done)
    [ -z "$missing" ] || { printf 'expected to pass, did not:\n%s\n' "$missing" >&2; exit 1; }
fi
