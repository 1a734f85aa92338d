/*
 * Every function of the C ABI, on its success path and its error paths: NULL pointers,
 * overflowing lengths, wrong-type and freed handles, values outside their domain.
 */
#include <commcore.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int checks;

#define RC(call, want)                                                                      \
    do {                                                                                    \
        commcore_result got_ = (call);                                                      \
        checks++;                                                                           \
        if (got_ != (want)) {                                                               \
            fprintf(stderr, "line %d: %s returned %d (%s: %s), expected %d\n", __LINE__, #call, \
                    got_, commcore_strerror(got_), commcore_last_error(), (int)(want));     \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)
#define OK(call) RC(call, COMMCORE_OK)
#define EXPECT(cond)                                                          \
    do {                                                                      \
        checks++;                                                             \
        if (!(cond)) {                                                        \
            fprintf(stderr, "line %d: expected %s\n", __LINE__, #cond);       \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

static void errors_and_version(void) {
    EXPECT(strlen(commcore_version()) > 0);
    EXPECT(strcmp(commcore_last_error(), "") == 0);
    EXPECT(strcmp(commcore_strerror(COMMCORE_OK), "success") == 0);
    for (commcore_result c = COMMCORE_ERR_NULL; c <= COMMCORE_ERR_NOT_IMPLEMENTED; c++)
        EXPECT(strcmp(commcore_strerror(c), "unknown result code") != 0);
    EXPECT(strcmp(commcore_strerror(1), "unknown result code") == 0);
    EXPECT(strcmp(commcore_strerror(-7001), "unknown result code") == 0);
}

static commcore_groups *groups_with_world(uint16_t *pgid, uint32_t n) {
    commcore_groups *g = NULL;
    uint64_t addresses[64];
    uint32_t nodes[64];
    for (uint32_t i = 0; i < n; i++) addresses[i] = 0x1000 + i, nodes[i] = i / 4;
    OK(commcore_groups_create(1024, 256, &g));
    OK(commcore_groups_register(g, addresses, nodes, NULL, NULL, n, pgid));
    return g;
}

static void groups(void) {
    commcore_groups *g = NULL;
    uint16_t pgid = 0xffff;
    RC(commcore_groups_create(16, 0, NULL), COMMCORE_ERR_NULL);
    RC(commcore_groups_create(SIZE_MAX, 0, &g), COMMCORE_ERR_LENGTH);
    RC(commcore_groups_create(0, SIZE_MAX, &g), COMMCORE_ERR_LENGTH);
    OK(commcore_groups_create(16, 64, &g));

    uint64_t addresses[3] = {7, 8, 9};
    uint32_t nodes[3] = {0, 0, 1};
    uint8_t transports[3] = {0, 1, 2}, stored[3] = {0, 0, 1};
    RC(commcore_groups_register(NULL, addresses, nodes, NULL, NULL, 3, &pgid), COMMCORE_ERR_NULL);
    RC(commcore_groups_register(g, NULL, nodes, NULL, NULL, 3, &pgid), COMMCORE_ERR_NULL);
    RC(commcore_groups_register(g, addresses, nodes, NULL, NULL, 3, NULL), COMMCORE_ERR_NULL);
    RC(commcore_groups_register(g, addresses, nodes, NULL, NULL, SIZE_MAX, &pgid), COMMCORE_ERR_LENGTH);
    uint32_t big_node[1] = {1u << 24};
    RC(commcore_groups_register(g, addresses, big_node, NULL, NULL, 1, &pgid), COMMCORE_ERR_ARG);
    EXPECT(strstr(commcore_last_error(), "process 0") != NULL);
    uint8_t big_transport[1] = {200};
    RC(commcore_groups_register(g, addresses, nodes, big_transport, NULL, 1, &pgid), COMMCORE_ERR_ARG);

    /* A large address through the side table. */
    uint8_t wide[20], back[20];
    size_t len = 0;
    for (int i = 0; i < 20; i++) wide[i] = (uint8_t)(3 * i);
    OK(commcore_groups_store_address(g, wide, sizeof wide, &addresses[2]));
    RC(commcore_groups_store_address(g, NULL, 4, &addresses[2]), COMMCORE_ERR_NULL);
    RC(commcore_groups_store_address(g, wide, sizeof wide, NULL), COMMCORE_ERR_NULL);
    uint8_t huge[64] = {0};
    RC(commcore_groups_store_address(g, huge, sizeof huge, &addresses[0]), COMMCORE_ERR_FULL);
    OK(commcore_groups_register(g, addresses, nodes, transports, stored, 3, &pgid));
    EXPECT(pgid == 0);

    commcore_entry e;
    OK(commcore_groups_entry(g, pgid, 1, &e));
    EXPECT(e.address == 8 && e.node == 0 && e.transport == 1 && e.stored == 0);
    OK(commcore_groups_entry(g, pgid, 2, &e));
    EXPECT(e.stored == 1 && e.node == 1 && e.transport == 2);
    OK(commcore_groups_address(g, e.address, back, sizeof back, &len));
    EXPECT(len == 20 && memcmp(back, wide, 20) == 0);
    RC(commcore_groups_address(g, e.address, back, 4, &len), COMMCORE_ERR_LENGTH);
    EXPECT(len == 20);
    RC(commcore_groups_address(g, e.address, NULL, 20, &len), COMMCORE_ERR_NULL);
    RC(commcore_groups_address(g, 0xdead00000000ull, back, 20, &len), COMMCORE_ERR_NOT_FOUND);
    RC(commcore_groups_entry(g, pgid, 3, &e), COMMCORE_ERR_RANGE);
    RC(commcore_groups_entry(g, 9, 0, &e), COMMCORE_ERR_RANGE);
    RC(commcore_groups_entry(g, pgid, 0, NULL), COMMCORE_ERR_NULL);
    uint32_t n = 0;
    OK(commcore_groups_size(g, pgid, &n));
    EXPECT(n == 3);
    RC(commcore_groups_size(g, 5, &n), COMMCORE_ERR_RANGE);
    RC(commcore_groups_size(g, pgid, NULL), COMMCORE_ERR_NULL);

    /* The registry holds COMMCORE_MAX_GROUPS groups. */
    for (int i = 1; i < COMMCORE_MAX_GROUPS; i++) OK(commcore_groups_register(g, addresses, nodes, NULL, NULL, 1, &pgid));
    RC(commcore_groups_register(g, addresses, nodes, NULL, NULL, 1, &pgid), COMMCORE_ERR_FULL);

    OK(commcore_groups_free(g));
    RC(commcore_groups_free(g), COMMCORE_ERR_FREED);
    RC(commcore_groups_size(g, 0, &n), COMMCORE_ERR_FREED);
    OK(commcore_groups_free(NULL));
}

static uint64_t reversed(void *ctx, uint32_t rank) {
    uint16_t pgid = *(const uint16_t *)ctx;
    return COMMCORE_PROCESS(pgid, 15 - rank);
}

static uint64_t bad_word(void *ctx, uint32_t rank) {
    (void)ctx;
    return rank == 2 ? UINT64_MAX : 0;
}

static const char *model(const commcore_rankmap *m) {
    const char *name = NULL;
    OK(commcore_rankmap_model(m, &name));
    return name;
}

static void rankmaps(void) {
    uint16_t pgid, pgid2;
    commcore_groups *g = groups_with_world(&pgid, 16);
    uint64_t other[4] = {1, 2, 3, 4};
    uint32_t other_nodes[4] = {9, 9, 9, 9};
    OK(commcore_groups_register(g, other, other_nodes, NULL, NULL, 4, &pgid2));
    commcore_rankmap *world = NULL, *odd = NULL, *lut = NULL, *mixed = NULL, *cb = NULL, *merged = NULL, *dup = NULL, *grp = NULL;
    RC(commcore_rankmap_world(g, 7, &world), COMMCORE_ERR_RANGE);
    RC(commcore_rankmap_world(g, pgid, NULL), COMMCORE_ERR_NULL);
    RC(commcore_rankmap_world(NULL, pgid, &world), COMMCORE_ERR_NULL);
    OK(commcore_rankmap_world(g, pgid, &world));
    EXPECT(strcmp(model(world), "direct") == 0);

    uint32_t odd_ranks[8] = {1, 3, 5, 7, 9, 11, 13, 15}, shuffled[4] = {6, 0, 3, 9}, too_far[2] = {1, 16};
    OK(commcore_rankmap_create(world, odd_ranks, 8, &odd));
    EXPECT(strcmp(model(odd), "stride") == 0);
    OK(commcore_rankmap_create(world, shuffled, 4, &lut));
    EXPECT(strcmp(model(lut), "lut") == 0);
    RC(commcore_rankmap_create(world, too_far, 2, &dup), COMMCORE_ERR_RANGE);
    EXPECT(strstr(commcore_last_error(), "entry 1") != NULL);
    RC(commcore_rankmap_create(world, NULL, 2, &dup), COMMCORE_ERR_NULL);
    RC(commcore_rankmap_create(world, odd_ranks, SIZE_MAX, &dup), COMMCORE_ERR_LENGTH);

    int64_t p = commcore_rankmap_translate(odd, 3);
    EXPECT(p >= 0 && COMMCORE_PROCESS_PGID(p) == pgid && COMMCORE_PROCESS_LPID(p) == 7);
    EXPECT(commcore_rankmap_translate(odd, 8) == -COMMCORE_ERR_RANGE);
    EXPECT(commcore_rankmap_translate(NULL, 0) == -COMMCORE_ERR_NULL);
    EXPECT(commcore_rankmap_translate((const commcore_rankmap *)g, 0) == -COMMCORE_ERR_HANDLE);
    EXPECT(strstr(commcore_last_error(), "commcore_rankmap") != NULL);

    uint32_t ranks[3] = {0, 2, 1};
    uint64_t out[3];
    OK(commcore_rankmap_translate_batch(lut, ranks, 3, out));
    EXPECT(COMMCORE_PROCESS_LPID(out[0]) == 6 && COMMCORE_PROCESS_LPID(out[1]) == 3 && COMMCORE_PROCESS_LPID(out[2]) == 0);
    ranks[1] = 4;
    RC(commcore_rankmap_translate_batch(lut, ranks, 3, out), COMMCORE_ERR_RANGE);
    EXPECT(strstr(commcore_last_error(), "ranks[1]") != NULL);
    RC(commcore_rankmap_translate_batch(lut, ranks, 3, NULL), COMMCORE_ERR_NULL);

    uint32_t lpids[3] = {2, 1, 0}, bad_lpids[1] = {4};
    OK(commcore_rankmap_from_group(g, pgid2, lpids, 3, &grp));
    RC(commcore_rankmap_from_group(g, pgid2, bad_lpids, 1, &dup), COMMCORE_ERR_RANGE);
    RC(commcore_rankmap_from_group(g, 33, lpids, 3, &dup), COMMCORE_ERR_RANGE);
    uint64_t processes[3] = {COMMCORE_PROCESS(pgid, 5), COMMCORE_PROCESS(pgid2, 3), COMMCORE_PROCESS(pgid, 0)};
    OK(commcore_rankmap_from_processes(g, processes, 3, &mixed));
    EXPECT(strcmp(model(mixed), "mlut") == 0);
    EXPECT(commcore_rankmap_translate(mixed, 1) == (int64_t)COMMCORE_PROCESS(pgid2, 3));
    processes[0] = UINT64_MAX;
    RC(commcore_rankmap_from_processes(g, processes, 3, &dup), COMMCORE_ERR_ARG);

    OK(commcore_rankmap_from_callback(g, 16, reversed, &pgid, &cb));
    EXPECT(strcmp(model(cb), "stride") == 0);
    EXPECT(commcore_rankmap_translate(cb, 0) == (int64_t)COMMCORE_PROCESS(pgid, 15));
    RC(commcore_rankmap_from_callback(g, 16, NULL, NULL, &dup), COMMCORE_ERR_NULL);
    RC(commcore_rankmap_from_callback(g, 4, bad_word, NULL, &dup), COMMCORE_ERR_ARG);

    OK(commcore_rankmap_merge(odd, grp, 1, &merged));
    uint32_t size = 0;
    OK(commcore_rankmap_size(merged, &size));
    EXPECT(size == 11);
    EXPECT(commcore_rankmap_translate(merged, 8) == (int64_t)COMMCORE_PROCESS(pgid2, 2));
    commcore_groups *g2 = groups_with_world(&pgid2, 4);
    commcore_rankmap *foreign = NULL;
    OK(commcore_rankmap_world(g2, pgid2, &foreign));
    RC(commcore_rankmap_merge(odd, foreign, 1, &dup), COMMCORE_ERR_ARG);
    OK(commcore_rankmap_free(foreign));
    OK(commcore_groups_free(g2));

    OK(commcore_rankmap_dup(lut, &dup));
    EXPECT(commcore_rankmap_translate(dup, 3) == commcore_rankmap_translate(lut, 3));
    commcore_entry e;
    OK(commcore_rankmap_entry(lut, 0, &e));
    EXPECT(e.address == 0x1006 && e.node == 1);
    OK(commcore_rankmap_entry(mixed, 1, &e));
    EXPECT(e.address == 4 && e.node == 9);
    RC(commcore_rankmap_entry(lut, 4, &e), COMMCORE_ERR_RANGE);
    size_t bytes = 0, direct_bytes = 0;
    OK(commcore_rankmap_bytes(lut, &bytes));
    OK(commcore_rankmap_bytes(world, &direct_bytes));
    EXPECT(bytes == direct_bytes + 16);
    RC(commcore_rankmap_size(lut, NULL), COMMCORE_ERR_NULL);
    RC(commcore_rankmap_model(lut, NULL), COMMCORE_ERR_NULL);
    RC(commcore_rankmap_bytes(lut, NULL), COMMCORE_ERR_NULL);

    RC(commcore_groups_free(g), COMMCORE_ERR_BUSY);
    commcore_rankmap *maps[] = {world, odd, lut, mixed, cb, merged, dup, grp};
    for (size_t i = 0; i < sizeof maps / sizeof maps[0]; i++) OK(commcore_rankmap_free(maps[i]));
    RC(commcore_rankmap_free(lut), COMMCORE_ERR_FREED);
    EXPECT(commcore_rankmap_translate(lut, 0) == -COMMCORE_ERR_FREED);
    RC(commcore_rankmap_size(lut, &size), COMMCORE_ERR_FREED);
    RC(commcore_rankmap_free((commcore_rankmap *)g), COMMCORE_ERR_HANDLE);
    OK(commcore_rankmap_free(NULL));
    OK(commcore_groups_free(g));

    /* An arena too small for a table. */
    commcore_groups *tiny = NULL;
    uint64_t a4[4] = {0, 1, 2, 3};
    uint32_t n4[4] = {0, 0, 0, 0};
    OK(commcore_groups_create(2, 0, &tiny));
    OK(commcore_groups_register(tiny, a4, n4, NULL, NULL, 4, &pgid));
    OK(commcore_rankmap_world(tiny, pgid, &world));
    RC(commcore_rankmap_create(world, shuffled, 3, &lut), COMMCORE_ERR_FULL);
    OK(commcore_rankmap_free(world));
    OK(commcore_groups_free(tiny));
}

static void cid(void) {
    commcore_cid_space *space = NULL;
    commcore_cid_request *req = NULL;
    commcore_cid_step step;
    RC(commcore_cid_space_create(100, 0, 0, &space), COMMCORE_ERR_ARG);
    RC(commcore_cid_space_create(128, 128, 0, &space), COMMCORE_ERR_ARG);
    RC(commcore_cid_space_create(128, 32, 0, NULL), COMMCORE_ERR_NULL);
    RC(commcore_cid_space_create_lanes(128, 64, 0, 1, &space), COMMCORE_ERR_ARG);
    RC(commcore_cid_space_create_lanes(128, 64, 3, 1, &space), COMMCORE_ERR_ARG);
    RC(commcore_cid_space_create_lanes(128, 64, 2, 1, NULL), COMMCORE_ERR_NULL);
    OK(commcore_cid_space_create_lanes(128, 64, 2, 1, &space));
    OK(commcore_cid_space_free(space));
    space = NULL;
    OK(commcore_cid_space_create(128, 32, 1, &space));
    OK(commcore_cid_space_claim(space, 0));
    RC(commcore_cid_space_claim(space, 0), COMMCORE_ERR_STATE);
    RC(commcore_cid_space_claim(space, 128), COMMCORE_ERR_RANGE);
    RC(commcore_cid_space_release(space, 5), COMMCORE_ERR_STATE);
    int is_free = 0;
    OK(commcore_cid_space_is_free(space, 1, &is_free));
    EXPECT(is_free == 1);
    RC(commcore_cid_space_is_free(space, 1, NULL), COMMCORE_ERR_NULL);

    RC(commcore_cid_request_create(space, 9, 0, 0, &req), COMMCORE_ERR_ARG);
    RC(commcore_cid_request_create(space, COMMCORE_CID_LOWEST, 0, 0, NULL), COMMCORE_ERR_NULL);
    RC(commcore_cid_request_create((commcore_cid_space *)NULL, COMMCORE_CID_LOWEST, 0, 0, &req), COMMCORE_ERR_NULL);
    const commcore_cid_algorithm algorithms[3] = {COMMCORE_CID_LOWEST, COMMCORE_CID_MASK, COMMCORE_CID_HIGHEST};
    for (int a = 0; a < 3; a++) {
        commcore_cid_space *s = NULL;
        OK(commcore_cid_space_create(128, 32, 1, &s));
        OK(commcore_cid_space_claim(s, 0));
        OK(commcore_cid_request_create(s, algorithms[a], 0, 0, &req));
        RC(commcore_cid_request_handle_allreduce(req, NULL, 0), COMMCORE_ERR_STATE);
        RC(commcore_cid_request_poll(req, NULL), COMMCORE_ERR_NULL);
        uint32_t cid = UINT32_MAX;
        for (int guard = 0; guard < 100; guard++) {
            OK(commcore_cid_request_poll(req, &step));
            if (step.kind == COMMCORE_CID_DONE) {
                cid = step.cid;
                break;
            }
            EXPECT(step.kind == COMMCORE_CID_ALLREDUCE && step.nwords > 0 && step.op <= COMMCORE_CID_OP_BAND);
            /* A result of the wrong length is refused; the allreduce stays outstanding. */
            RC(commcore_cid_request_handle_allreduce(req, step.words, step.nwords + 1), COMMCORE_ERR_LENGTH);
            RC(commcore_cid_request_handle_allreduce(req, NULL, step.nwords), COMMCORE_ERR_NULL);
            OK(commcore_cid_request_handle_allreduce(req, step.words, step.nwords));
        }
        EXPECT(cid == 1);
        uint32_t allreduces = 0;
        OK(commcore_cid_request_allreduces(req, &allreduces));
        EXPECT(allreduces >= 1);
        RC(commcore_cid_request_allreduces(req, NULL), COMMCORE_ERR_NULL);
        OK(commcore_cid_request_abort(req)); /* a done request keeps its CID */
        OK(commcore_cid_space_is_free(s, 1, &is_free));
        EXPECT(is_free == 0);
        OK(commcore_cid_request_free(req));
        RC(commcore_cid_request_poll(req, &step), COMMCORE_ERR_FREED);
        /* Freeing the space handle first: the request keeps the space alive. */
        OK(commcore_cid_request_create(s, algorithms[a], 1, 0, &req));
        OK(commcore_cid_space_free(s));
        OK(commcore_cid_request_poll(req, &step));
        OK(commcore_cid_request_abort(req));
        RC(commcore_cid_request_poll(req, &step), COMMCORE_ERR_STATE);
        OK(commcore_cid_request_free(req));
    }
    OK(commcore_cid_request_free(NULL));
    RC(commcore_cid_request_abort((commcore_cid_request *)space), COMMCORE_ERR_HANDLE);
    OK(commcore_cid_space_release(space, 0));
    OK(commcore_cid_space_free(space));
    RC(commcore_cid_space_claim(space, 1), COMMCORE_ERR_FREED);

    commcore_cid_store *store = NULL;
    uint64_t v = 0;
    RC(commcore_cid_store_create(0, &store), COMMCORE_ERR_ARG);
    RC(commcore_cid_store_create(65537, &store), COMMCORE_ERR_ARG);
    RC(commcore_cid_store_create(64, NULL), COMMCORE_ERR_NULL);
    OK(commcore_cid_store_create(64, &store));
    OK(commcore_cid_store_insert(store, 3, 0xabc));
    RC(commcore_cid_store_insert(store, 3, 0xdef), COMMCORE_ERR_BUSY);
    RC(commcore_cid_store_insert(store, 64, 1), COMMCORE_ERR_RANGE);
    OK(commcore_cid_store_get(store, 3, &v));
    EXPECT(v == 0xabc);
    RC(commcore_cid_store_get(store, 3, NULL), COMMCORE_ERR_NULL);
    RC(commcore_cid_store_get(store, 4, &v), COMMCORE_ERR_NOT_FOUND);
    OK(commcore_cid_store_remove(store, 3, &v));
    RC(commcore_cid_store_remove(store, 3, &v), COMMCORE_ERR_NOT_FOUND);
    OK(commcore_cid_store_insert(store, 3, 1));
    OK(commcore_cid_store_remove(store, 3, NULL));
    OK(commcore_cid_store_free(store));
    RC(commcore_cid_store_get(store, 3, &v), COMMCORE_ERR_FREED);
    OK(commcore_cid_store_free(NULL));
}

/* An inter-communicator CID between groups {0, 1} (leader 0) and {2, 3} (leader 2), each
 * member with its own space, driven in lockstep in one thread. */
static void inter_cid(void) {
    commcore_cid_space *spaces[4];
    commcore_cid_inter_request *req[4];
    commcore_cid_step st[4];
    uint32_t claimed[4] = {3, 1, 1, 5}; /* member m holds CIDs 0..claimed[m]-1 */
    for (int m = 0; m < 4; m++) {
        OK(commcore_cid_space_create(256, 64, 0, &spaces[m]));
        for (uint32_t c = 0; c < claimed[m]; c++) OK(commcore_cid_space_claim(spaces[m], c));
        OK(commcore_cid_inter_request_create(spaces[m], COMMCORE_CID_MASK, 0, 0, m % 2 == 0, &req[m]));
    }
    RC(commcore_cid_inter_request_create(spaces[0], 7, 0, 0, 1, &req[0]), COMMCORE_ERR_ARG);
    RC(commcore_cid_inter_request_handle_exchange(req[1], 9), COMMCORE_ERR_STATE);
    RC(commcore_cid_inter_request_poll(req[0], NULL), COMMCORE_ERR_NULL);
    int done = 0;
    for (int round = 0; round < 50 && !done; round++) {
        for (int m = 0; m < 4; m++) OK(commcore_cid_inter_request_poll(req[m], &st[m]));
        for (int side = 0; side < 2; side++) {
            commcore_cid_step *a = &st[2 * side], *b = &st[2 * side + 1];
            if (a->kind != COMMCORE_CID_ALLREDUCE || b->kind != COMMCORE_CID_ALLREDUCE) continue;
            EXPECT(a->nwords == b->nwords && a->op == b->op && a->nwords <= 16);
            uint32_t out[16];
            for (size_t w = 0; w < a->nwords; w++) {
                uint32_t x = a->words[w], y = b->words[w];
                out[w] = a->op == COMMCORE_CID_OP_MAX ? (x > y ? x : y) : a->op == COMMCORE_CID_OP_MIN ? (x < y ? x : y) : (x & y);
            }
            OK(commcore_cid_inter_request_handle_allreduce(req[2 * side], out, a->nwords));
            OK(commcore_cid_inter_request_handle_allreduce(req[2 * side + 1], out, a->nwords));
        }
        if (st[0].kind == COMMCORE_CID_EXCHANGE && st[2].kind == COMMCORE_CID_EXCHANGE) {
            OK(commcore_cid_inter_request_handle_exchange(req[0], st[2].cid));
            OK(commcore_cid_inter_request_handle_exchange(req[2], st[0].cid));
        }
        done = 1;
        for (int m = 0; m < 4; m++) done &= st[m].kind == COMMCORE_CID_DONE;
    }
    EXPECT(done);
    for (int m = 0; m < 4; m++) {
        uint32_t local = m < 2 ? 3 : 5, remote = m < 2 ? 5 : 3;
        EXPECT(st[m].cid == local && st[m].remote_cid == remote);
        OK(commcore_cid_inter_request_free(req[m]));
        OK(commcore_cid_space_free(spaces[m]));
    }
    RC(commcore_cid_inter_request_poll(req[0], &st[0]), COMMCORE_ERR_FREED);
    OK(commcore_cid_inter_request_free(NULL));
}

static void coll(void) {
    uint32_t nodes[4] = {0, 0, 1, 1}, remote_nodes[3] = {5, 6, 7};
    commcore_coll_config config = {1, 4, 0, COMMCORE_THREAD_SINGLE, nodes, NULL, NULL};
    commcore_coll *c = NULL, *inter = NULL;
    RC(commcore_coll_create(NULL, &c), COMMCORE_ERR_NULL);
    RC(commcore_coll_create(&config, NULL), COMMCORE_ERR_NULL);
    config.rank = 4;
    RC(commcore_coll_create(&config, &c), COMMCORE_ERR_RANGE);
    config.rank = 1, config.thread_level = 9;
    RC(commcore_coll_create(&config, &c), COMMCORE_ERR_ARG);
    config.thread_level = COMMCORE_THREAD_MULTIPLE, config.control = "allreduce:bogus_algorithm";
    RC(commcore_coll_create(&config, &c), COMMCORE_ERR_CONTROL);
    EXPECT(strstr(commcore_last_error(), "bogus_algorithm") != NULL);
    config.control = "coll=^nosuch";
    RC(commcore_coll_create(&config, &c), COMMCORE_ERR_CONTROL);
    EXPECT(strstr(commcore_last_error(), "nosuch") != NULL);
    config.control = "basic.priority=5";
    OK(commcore_coll_create(&config, &c));

    const char *module = NULL, *algorithm = NULL;
    OK(commcore_coll_module(c, COMMCORE_COLL_ALLREDUCE, &module));
    EXPECT(strcmp(module, "hier") == 0);
    OK(commcore_coll_module(c, COMMCORE_COLL_ALLTOALL, &module));
    EXPECT(strcmp(module, "tuned") == 0);
    RC(commcore_coll_module(c, 16, &module), COMMCORE_ERR_ARG);
    RC(commcore_coll_module(c, COMMCORE_COLL_BCAST, NULL), COMMCORE_ERR_NULL);
    uint32_t rank = 0, size = 0, remote = 9, level = 0, node = 0;
    OK(commcore_coll_info(c, &rank, &size, &remote, &level));
    EXPECT(rank == 1 && size == 4 && remote == 0 && level == COMMCORE_THREAD_MULTIPLE);
    OK(commcore_coll_info(c, NULL, NULL, NULL, NULL));
    OK(commcore_coll_node(c, 0, 3, &node));
    EXPECT(node == 1);
    RC(commcore_coll_node(c, 0, 4, &node), COMMCORE_ERR_RANGE);
    RC(commcore_coll_node(c, 1, 0, &node), COMMCORE_ERR_RANGE);

    commcore_coll_args a;
    memset(&a, 0, sizeof a);
    a.coll_op = COMMCORE_COLL_ALLREDUCE, a.dtype = COMMCORE_DT_F64, a.reduce_op = COMMCORE_OP_SUM, a.count = 8;
    OK(commcore_coll_provider(c, &a, &module, &algorithm));
    EXPECT(strcmp(module, "hier") == 0 && strcmp(algorithm, "hier") == 0);
    RC(commcore_coll_provider(c, NULL, &module, &algorithm), COMMCORE_ERR_NULL);
    RC(commcore_coll_provider(c, &a, &module, NULL), COMMCORE_ERR_NULL);

    commcore_schedule *s = NULL;
    commcore_step step;
    size_t scratch = 1;
    RC(commcore_schedule_create(NULL), COMMCORE_ERR_NULL);
    OK(commcore_schedule_create(&s));
    OK(commcore_schedule_next(s, &step));
    EXPECT(step.kind == COMMCORE_STEP_END);
    OK(commcore_schedule_scratch_bytes(s, &scratch));
    EXPECT(scratch == 0);
    RC(commcore_schedule_provider(s, &module, &algorithm), COMMCORE_ERR_STATE);
    RC(commcore_schedule_next(s, NULL), COMMCORE_ERR_NULL);
    RC(commcore_coll_schedule(c, NULL, s), COMMCORE_ERR_NULL);
    RC(commcore_coll_schedule(c, &a, NULL), COMMCORE_ERR_NULL);
    RC(commcore_coll_schedule(NULL, &a, s), COMMCORE_ERR_NULL);
    OK(commcore_coll_schedule(c, &a, s));
    const char *built_module = NULL, *built_algorithm = NULL;
    OK(commcore_schedule_provider(s, &built_module, &built_algorithm));
    EXPECT(strcmp(built_module, "hier") == 0 && strcmp(built_algorithm, "hier") == 0);
    RC(commcore_schedule_provider(s, NULL, &built_algorithm), COMMCORE_ERR_NULL);
    int steps = 0;
    do {
        OK(commcore_schedule_next(s, &step));
        steps++;
    } while (step.kind != COMMCORE_STEP_END && steps < 1000);
    EXPECT(step.kind == COMMCORE_STEP_END && steps > 1);
    OK(commcore_schedule_next(s, &step));
    EXPECT(step.kind == COMMCORE_STEP_END);
    /* Rewound, the built schedule yields the same steps again. */
    OK(commcore_schedule_rewind(s));
    int again = 0;
    do {
        OK(commcore_schedule_next(s, &step));
        again++;
    } while (step.kind != COMMCORE_STEP_END && again < 1000);
    EXPECT(again == steps);
    RC(commcore_schedule_rewind(NULL), COMMCORE_ERR_NULL);

    commcore_coll_args bad = a;
    bad.coll_op = 99;
    RC(commcore_coll_schedule(c, &bad, s), COMMCORE_ERR_ARG);
    bad = a, bad.dtype = 15;
    RC(commcore_coll_schedule(c, &bad, s), COMMCORE_ERR_ARG);
    bad = a, bad.reduce_op = 12;
    RC(commcore_coll_schedule(c, &bad, s), COMMCORE_ERR_ARG);
    bad = a, bad.dtype = COMMCORE_DT_F32, bad.reduce_op = COMMCORE_OP_BAND;
    RC(commcore_coll_schedule(c, &bad, s), COMMCORE_ERR_COLL);
    bad = a, bad.user_op = (const commcore_user_op *)c;
    RC(commcore_coll_schedule(c, &bad, s), COMMCORE_ERR_HANDLE);
    bad = a, bad.coll_op = COMMCORE_COLL_BCAST, bad.root = 4;
    RC(commcore_coll_schedule(c, &bad, s), COMMCORE_ERR_COLL);
    bad.root = -7;
    RC(commcore_coll_schedule(c, &bad, s), COMMCORE_ERR_ARG);
    bad.root = 0, bad.in_place = 1;
    RC(commcore_coll_schedule(c, &bad, s), COMMCORE_ERR_ARG);
    bad.coll_op = COMMCORE_COLL_REDUCE; /* in place at a rank that is not the root */
    RC(commcore_coll_schedule(c, &bad, s), COMMCORE_ERR_ARG);
    EXPECT(strstr(commcore_last_error(), "root") != NULL);
    OK(commcore_schedule_next(s, &step)); /* a failed build leaves the schedule unbuilt */
    EXPECT(step.kind == COMMCORE_STEP_END);
    RC(commcore_schedule_rewind(s), COMMCORE_ERR_STATE);
    int32_t counts[4] = {1, 2, -3, 4}, short_counts[2] = {1, 1};
    bad = a, bad.coll_op = COMMCORE_COLL_ALLGATHERV, bad.nrecv = 4, bad.recv_counts = counts;
    RC(commcore_coll_schedule(c, &bad, s), COMMCORE_ERR_ARG);
    EXPECT(strstr(commcore_last_error(), "counts[2]") != NULL);
    bad.nrecv = 2, bad.recv_counts = short_counts;
    RC(commcore_coll_schedule(c, &bad, s), COMMCORE_ERR_COLL);

    /* In place: the schedule starts by copying the input from RECV into scratch. */
    a.in_place = 1;
    OK(commcore_coll_schedule(c, &a, s));
    OK(commcore_schedule_scratch_bytes(s, &scratch));
    EXPECT(scratch >= 64);
    OK(commcore_schedule_next(s, &step));
    EXPECT(step.kind == COMMCORE_STEP_COPY && step.src.buf == COMMCORE_BUF_RECV && step.dst.buf == COMMCORE_BUF_SCRATCH && step.src.len == 64);
    do OK(commcore_schedule_next(s, &step)); while (step.kind != COMMCORE_STEP_END);
    OK(commcore_schedule_rewind(s)); /* the prologue comes again */
    OK(commcore_schedule_next(s, &step));
    EXPECT(step.kind == COMMCORE_STEP_COPY && step.src.buf == COMMCORE_BUF_RECV && step.dst.buf == COMMCORE_BUF_SCRATCH && step.src.len == 64);
    a.in_place = 0;

    /* An inter-communicator: steps name the remote group; scan is undefined. */
    commcore_coll_config ic = {0, 2, 3, COMMCORE_THREAD_SINGLE, NULL, remote_nodes, NULL};
    OK(commcore_coll_create(&ic, &inter));
    OK(commcore_coll_node(inter, 1, 2, &node));
    EXPECT(node == 7);
    RC(commcore_coll_node(inter, 0, 0, &node), COMMCORE_ERR_NOT_FOUND);
    RC(commcore_coll_module(inter, COMMCORE_COLL_SCAN, &module), COMMCORE_ERR_COLL);
    OK(commcore_coll_schedule(inter, &a, s));
    int remote_steps = 0;
    for (steps = 0; steps < 1000; steps++) {
        OK(commcore_schedule_next(s, &step));
        if (step.kind == COMMCORE_STEP_END) break;
        if ((step.kind == COMMCORE_STEP_SEND || step.kind == COMMCORE_STEP_RECV) && step.group == COMMCORE_GROUP_REMOTE) remote_steps++;
    }
    EXPECT(remote_steps > 0);
    OK(commcore_coll_provider(inter, &a, &module, &algorithm));
    EXPECT(strcmp(algorithm, "leaders") == 0);
    OK(commcore_schedule_provider(s, &built_module, &built_algorithm));
    EXPECT(strcmp(built_module, module) == 0 && strcmp(built_algorithm, "leaders") == 0);
    a.in_place = 1;
    RC(commcore_coll_schedule(inter, &a, s), COMMCORE_ERR_ARG);
    a.in_place = 0, a.coll_op = COMMCORE_COLL_BCAST, a.root = COMMCORE_ROOT_HERE;
    OK(commcore_coll_schedule(inter, &a, s));

    /* Freeing the instance while its schedule is built: the schedule keeps it alive. */
    OK(commcore_coll_free(inter));
    do OK(commcore_schedule_next(s, &step)); while (step.kind != COMMCORE_STEP_END);
    RC(commcore_coll_info(inter, &rank, NULL, NULL, NULL), COMMCORE_ERR_FREED);
    OK(commcore_schedule_free(s));
    RC(commcore_schedule_next(s, &step), COMMCORE_ERR_FREED);
    RC(commcore_schedule_rewind(s), COMMCORE_ERR_FREED);
    RC(commcore_schedule_free((commcore_schedule *)c), COMMCORE_ERR_HANDLE);
    OK(commcore_schedule_free(NULL));
    OK(commcore_coll_free(c));
    OK(commcore_coll_free(NULL));
}

static int calls;
static void negate_sum(const void *src, void *dst, size_t count, commcore_datatype dtype, int32_t src_left, void *ctx) {
    const int32_t *s = src;
    int32_t *d = dst;
    calls++;
    *(int *)ctx = (int)dtype * 100 + src_left;
    for (size_t i = 0; i < count; i++) d[i] = -(s[i] + d[i]);
}

static void reductions(void) {
    int32_t in[3] = {1, 2, 3}, inout[3] = {10, 20, 30};
    OK(commcore_reduce(COMMCORE_OP_SUM, COMMCORE_DT_I32, in, inout, sizeof in, 1));
    EXPECT(inout[0] == 11 && inout[2] == 33);
    RC(commcore_reduce(COMMCORE_OP_SUM, COMMCORE_DT_I32, in, inout, 5, 1), COMMCORE_ERR_LENGTH);
    RC(commcore_reduce(COMMCORE_OP_SUM, COMMCORE_DT_I32, inout, inout + 1, 8, 1), COMMCORE_ERR_ARG);
    RC(commcore_reduce(COMMCORE_OP_SUM, COMMCORE_DT_I32, NULL, inout, 4, 1), COMMCORE_ERR_NULL);
    RC(commcore_reduce(COMMCORE_OP_SUM, COMMCORE_DT_I32, in, NULL, 4, 1), COMMCORE_ERR_NULL);
    RC(commcore_reduce(12, COMMCORE_DT_I32, in, inout, 4, 1), COMMCORE_ERR_ARG);
    RC(commcore_reduce(COMMCORE_OP_SUM, 15, in, inout, 4, 1), COMMCORE_ERR_ARG);
    float f[1] = {1}, g[1] = {2};
    RC(commcore_reduce(COMMCORE_OP_BAND, COMMCORE_DT_F32, f, g, 4, 1), COMMCORE_ERR_UNSUPPORTED);
    RC(commcore_reduce(COMMCORE_OP_MINLOC, COMMCORE_DT_F32, f, g, 4, 1), COMMCORE_ERR_UNSUPPORTED);
    OK(commcore_reduce(COMMCORE_OP_SUM, COMMCORE_DT_I32, NULL, NULL, 0, 1));
    struct { int64_t v; int32_t i; } a[1] = {{5, 3}}, b[1] = {{5, 1}};
    OK(commcore_reduce(COMMCORE_OP_MAXLOC, COMMCORE_DT_PAIR_I64_I32, a, b, sizeof a, 0));
    EXPECT(b[0].v == 5 && b[0].i == 1);
    a[0].v = 9;
    OK(commcore_reduce(COMMCORE_OP_MAXLOC, COMMCORE_DT_PAIR_I64_I32, a, b, sizeof a, 0));
    EXPECT(b[0].v == 9 && b[0].i == 3);

    commcore_user_op *op = NULL;
    int seen = 0;
    RC(commcore_user_op_create(NULL, NULL, 1, &op), COMMCORE_ERR_NULL);
    RC(commcore_user_op_create(negate_sum, &seen, 1, NULL), COMMCORE_ERR_NULL);
    OK(commcore_user_op_create(negate_sum, &seen, 1, &op));
    OK(commcore_reduce_user(op, COMMCORE_DT_I32, in, inout, sizeof in, 0));
    EXPECT(calls == 1 && seen == 200 && inout[0] == -12 && inout[2] == -36);
    RC(commcore_reduce_user(op, COMMCORE_DT_I32, in, inout, 6, 0), COMMCORE_ERR_LENGTH);
    RC(commcore_reduce_user(op, 77, in, inout, 4, 0), COMMCORE_ERR_ARG);
    RC(commcore_reduce_user(NULL, COMMCORE_DT_I32, in, inout, 4, 0), COMMCORE_ERR_NULL);
    EXPECT(calls == 1);
    OK(commcore_user_op_free(op));
    RC(commcore_reduce_user(op, COMMCORE_DT_I32, in, inout, 4, 0), COMMCORE_ERR_FREED);
    OK(commcore_user_op_free(NULL));
}

int main(void) {
    errors_and_version();
    groups();
    rankmaps();
    cid();
    inter_cid();
    coll();
    reductions();
    printf("api: %d checks passed\n", checks);
    return 0;
}
