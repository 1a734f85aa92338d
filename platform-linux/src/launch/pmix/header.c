/* Prints, as Rust, what src/launch/pmix/ffi.rs takes from Debian's libpmix headers: the
 * constants and keys it uses, and an assertion per size, alignment and field offset of the
 * structures it declares by hand. build.rs compiles and runs it; the crate includes its
 * output, so a declaration that differs from the header fails the build. */
#include <stddef.h>
#include <stdio.h>
#include <pmix.h>

#define SIZE(R, C)                                                                           \
    printf("const _: () = assert!(size_of::<%s>() == %zu && align_of::<%s>() == %zu, "      \
           "\"%s does not match %s\");\n",                                                   \
           #R, sizeof(C), #R, _Alignof(C), #R, #C)
#define FIELD(R, r, C, c)                                                                    \
    printf("const _: () = assert!(offset_of!(%s, %s) == %zu, \"%s.%s is not %s.%s\");\n",    \
           #R, #r, offsetof(C, c), #R, #r, #C, #c)
#define INT(name, type, value) printf("pub const %s: %s = %lld;\n", name, type, (long long)(value))
#define KEY(name, value) printf("pub const %s: &CStr = c\"%s\";\n", name, value)

int main(void) {
    SIZE(Status, pmix_status_t);
    SIZE(Rank, pmix_rank_t);
    SIZE(DataType, pmix_data_type_t);
    SIZE(Scope, pmix_scope_t);
    SIZE(DataRange, pmix_data_range_t);
    SIZE(InfoDirectives, pmix_info_directives_t);

    SIZE(Proc, pmix_proc_t);
    FIELD(Proc, nspace, pmix_proc_t, nspace);
    FIELD(Proc, rank, pmix_proc_t, rank);
    SIZE(Value, pmix_value_t);
    FIELD(Value, kind, pmix_value_t, type);
    FIELD(Value, data, pmix_value_t, data);
    SIZE(Info, pmix_info_t);
    FIELD(Info, key, pmix_info_t, key);
    FIELD(Info, flags, pmix_info_t, flags);
    FIELD(Info, value, pmix_info_t, value);
    SIZE(Pdata, pmix_pdata_t);
    FIELD(Pdata, proc_, pmix_pdata_t, proc);
    FIELD(Pdata, key, pmix_pdata_t, key);
    FIELD(Pdata, value, pmix_pdata_t, value);
    SIZE(App, pmix_app_t);
    FIELD(App, cmd, pmix_app_t, cmd);
    FIELD(App, argv, pmix_app_t, argv);
    FIELD(App, env, pmix_app_t, env);
    FIELD(App, cwd, pmix_app_t, cwd);
    FIELD(App, maxprocs, pmix_app_t, maxprocs);
    FIELD(App, info, pmix_app_t, info);
    FIELD(App, ninfo, pmix_app_t, ninfo);

    INT("MAX_NSLEN", "usize", PMIX_MAX_NSLEN);
    INT("MAX_KEYLEN", "usize", PMIX_MAX_KEYLEN);
    INT("SUCCESS", "Status", PMIX_SUCCESS);
    INT("ERR_NOT_FOUND", "Status", PMIX_ERR_NOT_FOUND);
    INT("ERR_NOT_SUPPORTED", "Status", PMIX_ERR_NOT_SUPPORTED);
    INT("ERR_TIMEOUT", "Status", PMIX_ERR_TIMEOUT);
    INT("RANK_WILDCARD", "Rank", PMIX_RANK_WILDCARD);
    INT("GLOBAL", "Scope", PMIX_GLOBAL);
    INT("RANGE_SESSION", "DataRange", PMIX_RANGE_SESSION);
    INT("BOOL", "DataType", PMIX_BOOL);
    INT("STRING", "DataType", PMIX_STRING);
    INT("INT", "DataType", PMIX_INT);
    INT("INT32", "DataType", PMIX_INT32);
    INT("UINT", "DataType", PMIX_UINT);
    INT("UINT8", "DataType", PMIX_UINT8);
    INT("UINT16", "DataType", PMIX_UINT16);
    INT("UINT32", "DataType", PMIX_UINT32);
    INT("UINT64", "DataType", PMIX_UINT64);
    INT("SIZE", "DataType", PMIX_SIZE);
    INT("PROC_RANK", "DataType", PMIX_PROC_RANK);
    INT("DATA_RANGE", "DataType", PMIX_DATA_RANGE);

    KEY("JOB_SIZE", PMIX_JOB_SIZE);
    KEY("UNIV_SIZE", PMIX_UNIV_SIZE);
    KEY("LOCAL_PEERS", PMIX_LOCAL_PEERS);
    KEY("NODEID", PMIX_NODEID);
    KEY("COLLECT_DATA", PMIX_COLLECT_DATA);
    KEY("OPTIONAL", PMIX_OPTIONAL);
    KEY("TIMEOUT", PMIX_TIMEOUT);
    KEY("RANGE", PMIX_RANGE);
    return 0;
}
