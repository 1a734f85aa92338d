/*
 * The C ABI side of scripts/instructions.sh ffi: the work of ffi/examples/probe.rs through
 * libcommcore, so callgrind can count commcore_rankmap_translate and
 * commcore_schedule_next against the Rust calls.
 *
 *   probe translate MODEL CALLS
 *   probe step OP RANKS REPS      prints the calls of commcore_schedule_next (END included)
 */
#include <commcore.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check(commcore_result rc, const char *what) {
    if (rc != COMMCORE_OK) {
        fprintf(stderr, "probe: %s: %s (%s)\n", what, commcore_strerror(rc), commcore_last_error());
        exit(1);
    }
}

/* The indirect arrays of ffi/examples/probe.rs. */
static size_t indirect(const char *model, uint32_t *out) {
    size_t n = 0;
    if (strcmp(model, "offset") == 0)
        for (uint32_t i = 100; i < 612; i++) out[n++] = i;
    else if (strcmp(model, "stride") == 0)
        for (uint32_t i = 0; i < 512; i++) out[n++] = 2 * i + 1;
    else if (strcmp(model, "blockstride") == 0)
        for (uint32_t b = 0; b < 64; b++)
            for (uint32_t i = 0; i < 4; i++) out[n++] = b * 16 + i;
    else if (strcmp(model, "lut") == 0)
        for (uint32_t i = 0; i < 512; i++) out[n++] = (i * 389 + 7) % 1024;
    return n;
}

static int translate(const char *model, uint64_t calls) {
    static uint64_t addresses[1024];
    static uint32_t nodes[1024], ranks[1024];
    for (uint32_t i = 0; i < 1024; i++) addresses[i] = 0x1000 + i, nodes[i] = i / 8;
    commcore_groups *groups = NULL;
    commcore_rankmap *world = NULL, *map = NULL;
    uint16_t world_id, other_id;
    check(commcore_groups_create(4096, 0, &groups), "groups");
    check(commcore_groups_register(groups, addresses, nodes, NULL, NULL, 1024, &world_id), "world");
    check(commcore_groups_register(groups, addresses, nodes, NULL, NULL, 64, &other_id), "other");
    check(commcore_rankmap_world(groups, world_id, &world), "world map");
    size_t n = indirect(model, ranks);
    if (strcmp(model, "direct") == 0) {
        check(commcore_rankmap_dup(world, &map), "dup");
    } else if (strcmp(model, "mlut") == 0) {
        static uint64_t members[128];
        for (uint32_t i = 0; i < 128; i++)
            members[i] = i % 2 == 0 ? COMMCORE_PROCESS(world_id, i * 3) : COMMCORE_PROCESS(other_id, i / 2);
        check(commcore_rankmap_from_processes(groups, members, 128, &map), "mlut");
    } else if (n > 0) {
        check(commcore_rankmap_create(world, ranks, n, &map), "create");
    } else {
        fprintf(stderr, "probe: unknown model %s\n", model);
        return 1;
    }
    const char *name = NULL;
    uint32_t size = 0;
    check(commcore_rankmap_model(map, &name), "model");
    check(commcore_rankmap_size(map, &size), "size");
    if (strcmp(name, model) != 0) {
        fprintf(stderr, "probe: %s built a %s map\n", model, name);
        return 1;
    }
    uint64_t sum = 0;
    for (uint64_t i = 0; i < calls; i++) {
        int64_t p = commcore_rankmap_translate(map, (uint32_t)(i % size));
        if (p < 0) check((commcore_result)-p, "translate");
        sum += COMMCORE_PROCESS_PGID(p) + COMMCORE_PROCESS_LPID(p);
    }
    printf("%llu\n", (unsigned long long)sum);
    check(commcore_rankmap_free(map), "free");
    check(commcore_rankmap_free(world), "free");
    check(commcore_groups_free(groups), "free");
    return 0;
}

static int step(const char *op, uint32_t ranks, uint64_t reps) {
    commcore_coll_args args;
    memset(&args, 0, sizeof args);
    args.dtype = COMMCORE_DT_F64, args.count = 1024, args.reduce_op = COMMCORE_OP_SUM;
    const char *control;
    if (strcmp(op, "allreduce") == 0) {
        args.coll_op = COMMCORE_COLL_ALLREDUCE, control = "allreduce:recursive_doubling";
    } else if (strcmp(op, "bcast") == 0) {
        args.coll_op = COMMCORE_COLL_BCAST, control = "bcast:binomial";
    } else {
        fprintf(stderr, "probe: unknown operation %s\n", op);
        return 1;
    }
    commcore_coll **colls = calloc(ranks, sizeof *colls);
    if (!colls) return 1;
    for (uint32_t r = 0; r < ranks; r++) {
        commcore_coll_config config = {r, ranks, 0, COMMCORE_THREAD_SINGLE, NULL, NULL, control};
        check(commcore_coll_create(&config, &colls[r]), "coll");
    }
    commcore_schedule *schedule = NULL;
    commcore_step s;
    check(commcore_schedule_create(&schedule), "schedule");
    uint64_t calls = 0;
    for (uint64_t i = 0; i < reps; i++)
        for (uint32_t r = 0; r < ranks; r++) {
            check(commcore_coll_schedule(colls[r], &args, schedule), "build");
            do {
                check(commcore_schedule_next(schedule, &s), "next");
                calls++;
            } while (s.kind != COMMCORE_STEP_END);
        }
    printf("%llu\n", (unsigned long long)calls);
    check(commcore_schedule_free(schedule), "free");
    for (uint32_t r = 0; r < ranks; r++) check(commcore_coll_free(colls[r]), "free");
    free(colls);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 3 && strcmp(argv[1], "translate") == 0)
        return translate(argv[2], argc > 3 ? strtoull(argv[3], NULL, 10) : 1000000);
    if (argc >= 3 && strcmp(argv[1], "step") == 0)
        return step(argv[2], argc > 3 ? (uint32_t)atoi(argv[3]) : 64, argc > 4 ? strtoull(argv[4], NULL, 10) : 100);
    fprintf(stderr, "usage: probe translate MODEL CALLS | probe step OP RANKS REPS\n");
    return 2;
}
