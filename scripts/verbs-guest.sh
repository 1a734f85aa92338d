#!/usr/bin/env bash
# The verbs transport on a real device: a Debian kernel booted under QEMU (software
# emulation) loads soft-RoCE, makes rxe0 on its virtual NIC, and runs
# target/release/examples/verbs_check (pairs of processes: on-demand and eager
# connections, ping-pong, 1 MiB by RDMA read both ways, a peer killed, a peer that stops
# receiving), then target/release/examples/verbs_world (jobs through the runtime: three
# processes with COMMCORE_TRANSPORT=verbs, and four on two hosts where the default choice
# takes verbs between hosts; 8 B, 20 kB and 1 MiB both ways, barriers, a 1 MiB broadcast
# and an allreduce; then the groups meet over verbs), and verbs_spawn (spawn of 1 and 4
# children onto the other host and a ping-pong with them, verbs connected on demand
# against eagerly, interleaved; times are emulation, ratios only), then the runtime's
# suites with COMMCORE_TRANSPORT=verbs (a subset, listed below), counting the device's
# resources with `rdma res show` before and after.
#   scripts/verbs-guest.sh [--json]   prints the check's results; exits non-zero when a
#                                     check failed, the guest did not boot, or resources
#                                     were left behind
# Needs (scripts/test.sh installs them): qemu-system-x86, busybox-static, cpio, kmod,
# libibverbs-dev, ibverbs-providers, iproute2, and the build tools of the verbs feature.
# Times printed from inside the guest are emulation, never figures.
set -euo pipefail
cd "$(dirname "$0")/.."
json=${1:-}
work=target/verbs-guest
mkdir -p "$work"
log() { [ "$json" = --json ] || echo "verbs-guest: $*" >&2; }

for tool in qemu-system-x86_64 busybox cpio apt-get dpkg ip rdma; do
    command -v "$tool" >/dev/null || {
        echo "verbs-guest.sh: $tool is missing (scripts/test.sh installs it)" >&2
        exit 1
    }
done

log "building verbs_check and verbs_world with the verbs feature"
cargo build --release --locked -q -p commcore-linux --features verbs --example verbs_check \
    --example verbs_world --example verbs_spawn
check=target/release/examples/verbs_check
world=target/release/examples/verbs_world
spawner=target/release/examples/verbs_spawn

# The runtime's suites, run in the guest with COMMCORE_TRANSPORT=verbs: each suite, its
# time limit in seconds per test, and the tests it runs. Emulation is slow, so each runs a subset
# that covers its subject; the tests below that cannot run over verbs say why.
suites=(
    "runtime_p2p 150 messages_between_a_pair_arrive_in_order_with_any_tag
        any_source_receives_every_rank_in_per_pair_order
        unexpected_messages_wait_and_posted_receives_match_in_order
        a_too_long_message_is_a_truncation_error_and_is_consumed
        bad_ranks_tags_and_counts_are_errors
        nonblocking_sends_and_receives_complete_with_test_and_wait
        eight_ranks_exchange_long_and_short_messages_all_at_once
        communicators_dup_split_and_create_with_agreed_context_ids
        every_collective_on_one_to_eight_ranks_flat_and_hierarchical
        a_killed_rank_ends_the_job_and_leaves_nothing_behind
        a_hung_job_is_killed_at_its_timeout"
    "runtime_coll 120 a_long_send_moves_on_while_its_receiver_waits_in_an_area_barrier
        sends_into_receives_posted_before_a_barrier_or_a_send_complete
        ranks_whose_protocol_settings_differ_are_refused_at_init"
    "runtime_intercomm 120 disjoint_groups_create_communicators_at_once_with_their_own_tags
        intercomm_between_equal_halves_talks_reduces_merges_dups_and_splits
        intercomm_between_unequal_groups_talks_reduces_merges_dups_and_splits
        bad_leaders_and_non_members_are_errors
        overlapping_groups_create_communicators_from_concurrent_threads"
    "runtime_dpm 150 two_jobs_accept_and_connect_then_talk_merge_and_disconnect
        parents_spawn_1_4_and_8_children_that_talk_merge_and_disconnect
        children_dying_before_during_and_after_are_errors_or_independence
        children_spawn_grandchildren_and_spawn_multiple_numbers_its_children
        bad_ports_are_the_same_error_on_every_rank"
)
# Not run over verbs, for a reason beyond time:
# - runtime_coll's areas_are_reused_across_hundreds_of_communicators,
#   every_collective_through_the_areas_and_chunked_through_them,
#   single_copy_reads_serve_ranks_sharing_cpus_when_their_bound_is_set,
#   control_strings_exclude_shm_and_several_nodes_keep_hier and
#   non_commutative_reductions_combine_in_rank_order expect the shared-memory component
#   ("allreduce by shm"): forcing verbs between every pair turns the node's areas off.
# - runtime_intercomm's intercomm_over_the_two_copy_path: a shared-memory setting.
# - runtime_p2p's a_rank_started_by_another_launcher_fails_instead_of_running_alone and
#   bad_job_sizes_are_errors_and_a_missing_program_is_named start no job's transport.
# - runtime_dpm's two-host tests (ignored by default): they check the groups meet over TCP.
# Left out for time only: the other tests of runtime_p2p and runtime_dpm (thousands of
# splits, communicator creation from threads with every algorithm, idle ranks, node labels
# and CPUs, a name server, 200 reconnections, joins over sockets, bad spawns, 1,000 spawn
# cycles).

log "building the runtime's suites with the verbs feature"
suite_args=()
for suite in "${suites[@]}"; do
    read -r name _ <<<"$suite"
    suite_args+=(--test "$name")
done
# The test programs' paths, by suite (their rank programs are found at the paths built in).
cargo test --release --locked -q -p commcore-tests --features verbs --no-run \
    --message-format=json "${suite_args[@]}" |
    jq -r 'select(.reason == "compiler-artifact" and .profile.test and .executable != null)
           | "\(.target.name) \(.executable)"' >"$work/suite-programs"

# The kernel Debian's linux-image-amd64 points at, downloaded once.
kernel_of() {
    apt-cache depends linux-image-amd64 2>/dev/null |
        awk '/Depends: linux-image-[0-9]/ { print $2; exit }'
}
kernel_pkg=$(kernel_of)
if [ -z "$kernel_pkg" ]; then # package lists missing or stale (a fresh image)
    apt-get update -qq
    kernel_pkg=$(kernel_of)
fi
[ -n "$kernel_pkg" ] || {
    echo "verbs-guest.sh: apt-cache knows no linux-image-amd64 (run apt-get update)" >&2
    exit 1
}
if [ ! -d "$work/kernel/$kernel_pkg" ]; then
    log "fetching $kernel_pkg"
    rm -rf "$work/kernel" && mkdir -p "$work/kernel/$kernel_pkg"
    (cd "$work/kernel" && apt-get download -q "$kernel_pkg" 2>/dev/null >/dev/null)
    dpkg -x "$work"/kernel/"$kernel_pkg"_*.deb "$work/kernel/$kernel_pkg"
    rm -f "$work"/kernel/*.deb
fi
kroot=$work/kernel/$kernel_pkg
version=$(ls "$kroot/lib/modules")
vmlinuz=$kroot/boot/vmlinuz-$version

# The initramfs: busybox, the modules soft-RoCE needs (in load order), the verbs
# libraries and rxe provider, rdma(8), our check, and an /init that runs it.
root=$work/root
rm -rf "$root"
mkdir -p "$root"/{bin,sbin,dev,proc,sys,tmp,etc/libibverbs.d,modules,lib64}
cp "$(command -v busybox)" "$root/bin/busybox"
for applet in sh mount insmod sleep cat echo poweroff grep sed mkdir seq timeout date tail; do
    ln -s busybox "$root/bin/$applet"
done
# veth and bridge make the runtime job's two hosts (network namespaces linked by iproute2).
modules="virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci failover
    net_failover virtio_net crc32_generic udp_tunnel ip6_udp_tunnel ib_core ib_uverbs rdma_rxe
    llc stp bridge veth"
for m in $modules; do
    file=$(find "$kroot/lib/modules/$version" -name "$m.ko" | head -n 1)
    [ -n "$file" ] || { echo "verbs-guest.sh: module $m not in $kernel_pkg" >&2; exit 1; }
    cp "$file" "$root/modules/"
done
provider_dir=/usr/lib/x86_64-linux-gnu/libibverbs
copy_with_libs() { # file destination-in-root
    mkdir -p "$root/$(dirname "$2")"
    cp "$1" "$root/$2"
    ldd "$1" | awk '/=> \// { print $3 } /^\t\/lib/ { print $1 }' | while read -r lib; do
        mkdir -p "$root/$(dirname "$lib")"
        cp -L "$lib" "$root/$lib"
    done
}
copy_with_libs "$check" /bin/verbs_check
copy_with_libs "$world" /bin/verbs_world
copy_with_libs "$spawner" /bin/verbs_spawn
# Each suite's program, and its rank programs at the paths compiled into it.
while read -r name program; do
    copy_with_libs "$program" "/suites/$name"
done <"$work/suite-programs"
for rank_program in runtime_rank runtime_intercomm_rank dpm_rank; do
    copy_with_libs "target/release/$rank_program" "$PWD/target/release/$rank_program"
done
copy_with_libs "$(command -v rdma)" /bin/rdma
copy_with_libs "$(command -v ip)" /bin/ip
copy_with_libs "$provider_dir/librxe-rdmav34.so" "$provider_dir/librxe-rdmav34.so"
cp /etc/libibverbs.d/rxe.driver "$root/etc/libibverbs.d/"
cat >"$root/init" <<'INIT'
#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/shm && mount -t tmpfs tmpfs /dev/shm
# A suite's test asks for a buffer past the largest message (2 GiB) whose pages it never
# touches: allow it beside the guest's 1 GiB, as a host with more memory would.
echo 1 >/proc/sys/vm/overcommit_memory
for m in virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci failover \
    net_failover virtio_net crc32_generic udp_tunnel ip6_udp_tunnel ib_core ib_uverbs rdma_rxe \
    llc stp bridge veth; do
    insmod /modules/$m.ko || echo "GUEST-ERROR insmod $m"
done
ip link set lo up
ip link set eth0 up
ip addr add 10.0.2.15/24 dev eth0
rdma link add rxe0 type rxe netdev eth0 || echo "GUEST-ERROR rdma link add"
for i in $(seq 1 50); do
    grep -q ACTIVE /sys/class/infiniband/rxe0/ports/1/state 2>/dev/null && break
    sleep 0.2
done
echo "GUEST-RES-BEFORE $(rdma res show | sed -n 1p)"
/bin/verbs_check
echo "GUEST-EXIT $?"
# Jobs through the runtime: three processes with every pair over verbs, then four on two
# hosts choosing shared memory within a host and verbs between them.
/bin/verbs_world
# The paper's comparison: spawn onto another host and ping-pong, on demand against eager.
/bin/verbs_spawn
# The runtime's suites over verbs.
sh /suites.sh
echo "GUEST-RES-AFTER $(rdma res show | sed -n 1p)"
poweroff -f
INIT
chmod +x "$root/init"
# The suites' runner: each test under its suite's limit, its outcome on the console (a
# failed one's log after it), then one line of counts.
{
    cat <<'RUNNER'
export COMMCORE_TRANSPORT=verbs
counts=""
run_suite() { # name limit tests...
    name=$1 limit=$2
    shift 2
    passed=0 failed=0 start=$(date +%s)
    # One program run per test, so that a hang or a crash counts against that test alone
    # (a rank's own output may share a line with the harness's).
    for test in "$@"; do
        timeout "$limit" "/suites/$name" --test-threads=1 --exact "$test" >/tmp/test.log 2>&1
        code=$?
        if [ "$code" = 0 ] && grep -q '^test result: ok. 1 passed' /tmp/test.log; then
            passed=$((passed + 1))
            echo "GUEST-TEST $name $test ok"
        else
            failed=$((failed + 1))
            echo "GUEST-TEST $name $test FAILED (exit $code)"
            tail -n 30 /tmp/test.log | cut -c1-300 | sed "s/^/GUEST-TEST-LOG $name $test: /"
        fi
    done
    entry="\"$name\": {\"tests\": $#, \"passed\": $passed, \"failed\": $failed, \"seconds\": $(($(date +%s) - start))}"
    counts="${counts:+$counts, }$entry"
}
RUNNER
    for suite in "${suites[@]}"; do
        echo run_suite $suite
    done
    echo 'echo "VERBS-SUITES-RESULT {$counts}"'
} >"$root/suites.sh"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$work/initrd.gz"

log "booting $version under QEMU (software emulation, about a minute)"
out=$work/console.log
timeout 600 qemu-system-x86_64 -m 1024 -smp 2 -nographic -no-reboot \
    -kernel "$vmlinuz" -initrd "$work/initrd.gz" \
    -append "console=ttyS0 quiet panic=-1" \
    -netdev user,id=n0 -device virtio-net-pci,netdev=n0 </dev/null >"$out" 2>&1 || true
tr -d '\r' <"$out" >"$out.txt"

# (A line may start with the console's escape codes.)
result=$(sed -n 's/.*VERBS-RESULT //p' "$out.txt" | tail -n 1)
world=$(sed -n 's/.*VERBS-WORLD-RESULT //p' "$out.txt" | tail -n 1)
[ -n "$world" ] || world='{"ok": false, "error": "the guest printed no runtime result"}'
spawned=$(sed -n 's/.*VERBS-SPAWN-RESULT //p' "$out.txt" | tail -n 1)
[ -n "$spawned" ] || spawned='{"ok": false, "error": "the guest printed no spawn result"}'
# Each suite passes when every test it ran passed.
suite_counts=$(sed -n 's/.*VERBS-SUITES-RESULT //p' "$out.txt" | tail -n 1)
[ -n "$suite_counts" ] || suite_counts='{"error": "the guest printed no suite result"}'
suite_counts=$(printf '%s' "$suite_counts" | jq -c \
    '{ok: ((to_entries | length) > 0 and all(.[]; type == "object" and .failed == 0
              and .passed == .tests)),
      suites: .}')
before=$(sed -n 's/.*GUEST-RES-BEFORE //p' "$out.txt")
after=$(sed -n 's/.*GUEST-RES-AFTER //p' "$out.txt")
if [ -z "$result" ]; then
    echo "verbs-guest.sh: the guest printed no result; its console is in $out.txt:" >&2
    tail -n 30 "$out.txt" >&2
    exit 1
fi
# Nothing of ours may be left on the device: the counts after equal those before.
clean=false
[ -n "$before" ] && [ "$before" = "$after" ] && clean=true
errors=$(grep -c 'GUEST-ERROR' "$out.txt" || true)
summary=$(printf '%s' "$result" | jq -c --arg before "$before" --arg after "$after" \
    --argjson clean "$clean" --argjson errors "$errors" --argjson world "$world" \
    --argjson spawned "$spawned" --argjson suites "$suite_counts" \
    '. + {resources_before: $before, resources_after: $after, resources_released: $clean,
          guest_errors: $errors, runtime_job: $world, spawn_on_demand_vs_eager: $spawned,
          runtime_suites: $suites} |
     .ok = (.ok and $clean and $errors == 0 and $world.ok and $spawned.ok and $suites.ok)')
if [ "$json" = --json ]; then
    echo "$summary"
else
    printf '%s\n' "$summary" | jq .
fi
printf '%s' "$summary" | jq -e .ok >/dev/null
