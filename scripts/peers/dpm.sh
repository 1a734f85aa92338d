# The `dpm` group of compare-peers.sh: Open MPI's side of `commcore bench dpm`, from
# scripts/peers/dpm.c. Sourced by compare-peers.sh, which sets $out and has built
# $out/dpm-openmpi. Every job runs under `timeout`; a job that hits it counts as a hang,
# and a spawn series that hung is resumed for its remaining repetitions (at most 3 jobs);
# a single spawn over DPM_REP_TIMEOUT seconds (default 10) is a hang too.
#
# dpm_rows prints a JSON list of rows in compare-peers' shape with "commcore": null,
# "mpich": null and a note: commcore's side (`commcore bench dpm`) is not built yet, and
# Debian's MPICH 4.0.2 (ch4:ucx) cannot spawn.

dpm_timeout=${DPM_TIMEOUT:-30}
dpm_reps=${DPM_REPS:-10}
# Runs and hangs are lines in this file, since jobs run in subshells: "run" for a run
# that ended, "hang" for one that hit its timeout.
dpm_counts=

# Runs one Open MPI job under the timeout and prints its stdout. It counts as one run,
# or, with DPM_SERIES=1, only its hang (the caller counts the repetitions that finished).
dpm_job() { # np args...
    local np=$1 status=0
    shift
    OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader,tcp timeout -k 5 "$dpm_timeout" \
        mpirun.openmpi --allow-run-as-root --oversubscribe -np "$np" "$@" || status=$?
    if [ "$status" = 124 ] || [ "$status" = 137 ]; then
        echo hang >>"$dpm_counts"
        log "dpm: hang (timeout ${dpm_timeout}s): -np $np $*"
        return
    fi
    [ "${DPM_SERIES:-0}" = 1 ] || echo run >>"$dpm_counts"
    if [ "$status" != 0 ]; then
        log "dpm: failed with status $status: -np $np $*"
    fi
}

# {children, first_ms, median_ms, p90_ms} over $dpm_reps spawns of $1 children. Each
# repetition is a run; one that hangs is counted and the series goes on in a new job.
dpm_spawn() { # children
    local times=() line jobs=0
    while [ "${#times[@]}" -lt "$dpm_reps" ] && [ "$jobs" -lt 3 ]; do
        jobs=$((jobs + 1))
        while read -r line; do
            if [ "$line" = '{"hang": 1}' ]; then
                echo hang >>"$dpm_counts"
                log "dpm: a spawn of $1 took over ${DPM_REP_TIMEOUT:-10}s: a hang"
                continue
            fi
            times+=("$(jq '.ms' <<<"$line")")
            echo run >>"$dpm_counts"
        done < <(DPM_SERIES=1 dpm_job 1 "$dpm_bin" spawn "$1" "$((dpm_reps - ${#times[@]}))" |
            grep -E '^\{"(ms|hang)"')
    done
    printf '%s\n' "${times[@]}" | jq -s -c --argjson c "$1" '
        {children: $c, first_ms: .[0], median_ms: (sort | .[(length / 2 | floor)]),
         p90_ms: (sort | .[((length * 9 / 10) | floor) - (if length >= 10 then 1 else 0 end)]),
         spawns: length}'
}

dpm_rows() {
    dpm_bin=$(realpath "$out/dpm-openmpi")
    dpm_counts="$out/dpm-counts"
    : >"$dpm_counts"
    local s1 s4 rate m11 m22 s11 s22 intra spawned connected coll port server_uri server_pid \
        accepting runs hangs
    s1=$(dpm_spawn 1)
    s4=$(dpm_spawn 4)
    rate=$(dpm_job 1 "$dpm_bin" rate 10 | tail -n 1)
    m11=$(dpm_job 1 "$dpm_bin" merge_spawned 1 50 | tail -n 1)
    m22=$(dpm_job 2 "$dpm_bin" merge_spawned 2 50 | tail -n 1)
    s11=$(dpm_job 2 "$dpm_bin" merge_static 50 | tail -n 1)
    s22=$(dpm_job 4 "$dpm_bin" merge_static 50 | tail -n 1)
    intra=$(dpm_job 2 "$dpm_bin" pingpong_intra | tail -n 1)
    spawned=$(dpm_job 1 "$dpm_bin" pingpong_spawned | tail -n 1)
    coll=$(dpm_job 2 "$dpm_bin" intercomm_coll | tail -n 1)
    # Two independent jobs meet through ompi-server (Open MPI's way to let separately
    # started jobs connect); the accepting job writes its port name to a file.
    port="$out/dpm-port"
    server_uri="$out/dpm-ompi-server.uri"
    rm -f "$port" "$server_uri"
    ompi-server --no-daemonize --report-uri "$server_uri" &
    server_pid=$!
    for _ in $(seq 100); do [ -s "$server_uri" ] && break; sleep 0.1; done
    dpm_job 1 --ompi-server "file:$server_uri" "$dpm_bin" connect_server "$port" 20 >/dev/null &
    accepting=$!
    connected=$(dpm_job 1 --ompi-server "file:$server_uri" "$dpm_bin" connect_client "$port" 20 |
        tail -n 1)
    wait "$accepting" || true
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true

    runs=$(grep -c . "$dpm_counts" || true)
    hangs=$(grep -c hang "$dpm_counts" || true)
    local j
    for j in rate m11 m22 s11 s22 intra spawned coll connected; do
        # A job that hung or failed printed nothing or not JSON: its figures are null.
        { [ -n "${!j}" ] && jq -e . >/dev/null 2>&1 <<<"${!j}"; } || printf -v "$j" '%s' 'null'
    done
    jq -c -n --argjson s1 "$s1" --argjson s4 "$s4" --argjson rate "$rate" \
        --argjson m11 "$m11" --argjson m22 "$m22" --argjson s11 "$s11" --argjson s22 "$s22" \
        --argjson intra "$intra" --argjson spawned "$spawned" --argjson coll "$coll" \
        --argjson connected "$connected" --argjson runs "$runs" --argjson hangs "$hangs" '
        def row($figure; $procs; $value; $unit; $better):
            {figure: $figure, procs: $procs, commcore: null, openmpi: $value, mpich: null,
             unit: $unit, ratio_to_best_peer: null, better: $better,
             note: "commcore bench dpm is not built yet (spawn, accept/connect and merge need the runtime'"'"'s process groups and TCP transport); Debian'"'"'s MPICH 4.0.2 (ch4:ucx) cannot spawn, so it has no figures here"};
        [ ($s1, $s4) as $s
          | row("spawn_first_\($s.children)"; 1 + $s.children; $s.first_ms; "ms"; "lower"),
            row("spawn_median_\($s.children)"; 1 + $s.children; $s.median_ms; "ms"; "lower"),
            row("spawn_p90_\($s.children)"; 1 + $s.children; $s.p90_ms; "ms"; "lower") ]
        + [ row("spawn_rate"; 2; $rate.per_s?; "spawns/s"; "higher"),
            row("merge_spawned_1+1"; 2; $m11.median_us?; "us"; "lower"),
            row("merge_spawned_2+2"; 4; $m22.median_us?; "us"; "lower"),
            row("merge_static_1+1"; 2; $s11.median_us?; "us"; "lower"),
            row("merge_static_2+2"; 4; $s22.median_us?; "us"; "lower") ]
        + [ (["intra", $intra], ["inter_spawned", $spawned], ["inter_connected", $connected])
            as [$mode, $p]
            | ("8", "65536") as $b
            | row("pingpong_\($mode)_\($b)B"; 2; $p[$b]?; "us"; "lower") ]
        + [ row("accept_connect_median"; 2; $connected.accept_connect_median_us?; "us"; "lower") ]
        + [ ("barrier", "bcast_8", "bcast_65536", "allreduce_8", "allreduce_65536") as $op
            | row("intercomm_\($op)@2+2"; 4; $coll[$op]?; "us"; "lower") ]
        + [ row("hangs"; null; $hangs; "runs that hit their timeout, of \($runs)"; "lower") ]'
}
