/* Environment: init state, thread level, clocks, names, versions, error texts and
 * handlers, and a call not provided yet. */
#include <mpi.h>
#include <string.h>
#include "check.h"

static int handled = 0, handled_code = 0;
static void on_error(MPI_Comm *comm, int *code, ...) {
    (void)comm;
    handled++;
    handled_code = *code;
}

int main(int argc, char **argv) {
    int flag, provided, v, sv, len, cls;
    MPI_Initialized(&flag);
    CHECK(flag == 0);
    CHECK_RC(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided), MPI_SUCCESS);
    CHECK(provided >= MPI_THREAD_SINGLE && provided <= MPI_THREAD_MULTIPLE);
    MPI_Query_thread(&v);
    CHECK(v == provided);
    MPI_Is_thread_main(&flag);
    CHECK(flag == 1);
    MPI_Initialized(&flag);
    CHECK(flag == 1);
    MPI_Finalized(&flag);
    CHECK(flag == 0);

    MPI_Errhandler eh;
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh);
    CHECK(eh == MPI_ERRORS_ARE_FATAL);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh);
    CHECK(eh == MPI_ERRORS_RETURN);

    double t0 = MPI_Wtime(), t1 = MPI_Wtime();
    CHECK(t1 >= t0 && MPI_Wtick() > 0 && MPI_Wtick() < 1);
    MPI_Get_version(&v, &sv);
    CHECK(v == MPI_VERSION && sv == MPI_SUBVERSION);
    char name[MPI_MAX_PROCESSOR_NAME], lib[MPI_MAX_LIBRARY_VERSION_STRING];
    CHECK_RC(MPI_Get_processor_name(name, &len), MPI_SUCCESS);
    CHECK(len > 0 && (int)strlen(name) == len);
    CHECK_RC(MPI_Get_library_version(lib, &len), MPI_SUCCESS);
    CHECK(strstr(lib, "commcore") != NULL);
    char text[MPI_MAX_ERROR_STRING];
    CHECK_RC(MPI_Error_string(MPI_ERR_TRUNCATE, text, &len), MPI_SUCCESS);
    CHECK(len > 0 && strstr(text, "trunc") != NULL);
    MPI_Error_class(MPI_ERR_RANK, &cls);
    CHECK(cls == MPI_ERR_RANK);
    CHECK_RC(MPI_Error_class(-7, &cls), MPI_ERR_ARG);
    /* Added classes and codes: above MPI_ERR_LASTCODE, with their strings. */
    int added_class, added_code, arg_code, *last_used;
    CHECK_RC(MPI_Add_error_class(&added_class), MPI_SUCCESS);
    CHECK(added_class > MPI_ERR_LASTCODE);
    CHECK_RC(MPI_Error_string(added_class, text, &len), MPI_SUCCESS);
    CHECK(len == 0);
    CHECK_RC(MPI_Add_error_code(added_class, &added_code), MPI_SUCCESS);
    CHECK_RC(MPI_Add_error_code(MPI_ERR_ARG, &arg_code), MPI_SUCCESS);
    CHECK_RC(MPI_Add_error_string(added_code, "the widget jammed"), MPI_SUCCESS);
    MPI_Error_class(added_code, &cls);
    CHECK(cls == added_class);
    MPI_Error_class(arg_code, &cls);
    CHECK(cls == MPI_ERR_ARG);
    CHECK_RC(MPI_Error_string(added_code, text, &len), MPI_SUCCESS);
    CHECK(strcmp(text, "the widget jammed") == 0 && len == 17);
    CHECK_RC(MPI_Add_error_string(MPI_ERR_RANK, "mine"), MPI_ERR_ARG);
    CHECK_RC(MPI_Add_error_code(added_code, &arg_code), MPI_ERR_ARG);
    CHECK_RC(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &last_used, &flag), MPI_SUCCESS);
    CHECK(flag == 1 && *last_used >= added_code);

    /* Predefined attributes, names, profiling control, raising an error. */
    int *tag_ub, *wtime_global;
    CHECK_RC(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag), MPI_SUCCESS);
    CHECK(flag == 1 && *tag_ub >= 32767);
    CHECK_RC(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &wtime_global, &flag), MPI_SUCCESS);
    CHECK(flag == 1 && (*wtime_global == 0 || *wtime_global == 1));
    char cname[MPI_MAX_OBJECT_NAME];
    MPI_Comm_get_name(MPI_COMM_WORLD, cname, &len);
    CHECK(strcmp(cname, "MPI_COMM_WORLD") == 0 && len == 14);
    MPI_Comm_set_name(MPI_COMM_SELF, "myself");
    MPI_Comm_get_name(MPI_COMM_SELF, cname, &len);
    CHECK(strcmp(cname, "myself") == 0 && len == 6);
    CHECK_RC(MPI_Pcontrol(1), MPI_SUCCESS);
    CHECK_RC(MPI_Comm_call_errhandler(MPI_COMM_WORLD, MPI_ERR_OTHER), MPI_SUCCESS);

    /* Info objects. */
    MPI_Info info, info2;
    char value[64], key[MPI_MAX_INFO_KEY + 1];
    int nkeys;
    CHECK_RC(MPI_Info_create(&info), MPI_SUCCESS);
    MPI_Info_set(info, "host", "a");
    MPI_Info_set(info, "wdir", "/tmp");
    MPI_Info_set(info, "host", "b");
    MPI_Info_get_nkeys(info, &nkeys);
    CHECK(nkeys == 2);
    MPI_Info_get(info, "host", sizeof value - 1, value, &flag);
    CHECK(flag == 1 && strcmp(value, "b") == 0);
    MPI_Info_get_nthkey(info, 1, key);
    CHECK(strcmp(key, "wdir") == 0);
    MPI_Info_dup(info, &info2);
    MPI_Info_delete(info, "host");
    MPI_Info_get(info, "host", sizeof value - 1, value, &flag);
    CHECK(flag == 0);
    MPI_Info_get_valuelen(info2, "wdir", &len, &flag);
    CHECK(flag == 1 && len == 4);
    CHECK_RC(MPI_Info_delete(info, "host"), MPI_ERR_INFO_NOKEY);
    MPI_Info_free(&info);
    MPI_Info_free(&info2);
    /* The environment's info: the command as argv[0] names it, here and in MPI_INFO_ENV. */
    CHECK_RC(MPI_Info_create_env(argc, argv, &info), MPI_SUCCESS);
    MPI_Info_get(info, "command", sizeof value - 1, value, &flag);
    CHECK(flag == 1 && strcmp(value, argv[0]) == 0);
    MPI_Info_free(&info);
    MPI_Info_get(MPI_INFO_ENV, "command", sizeof value - 1, value, &flag);
    CHECK(flag == 1 && strcmp(value, argv[0]) == 0);
    CHECK(info == MPI_INFO_NULL);

    /* A user error handler: called with the code, which the call then returns. */
    MPI_Errhandler mine;
    CHECK_RC(MPI_Comm_create_errhandler(on_error, &mine), MPI_SUCCESS);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, mine);
    int x = 0;
    CHECK_RC(MPI_Send(&x, 1, MPI_INT, 5, 0, MPI_COMM_SELF), MPI_ERR_RANK);
    CHECK(handled == 1 && handled_code == MPI_ERR_RANK);
    CHECK_RC(MPI_Comm_call_errhandler(MPI_COMM_SELF, MPI_ERR_OTHER), MPI_SUCCESS);
    CHECK(handled == 2 && handled_code == MPI_ERR_OTHER);
    CHECK_RC(MPI_Errhandler_free(&mine), MPI_SUCCESS);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);

    /* MPI-1 names. */
    MPI_Errhandler old;
    CHECK_RC(MPI_Errhandler_set(MPI_COMM_WORLD, MPI_ERRORS_RETURN), MPI_SUCCESS);
    MPI_Errhandler_get(MPI_COMM_WORLD, &old);
    CHECK(old == MPI_ERRORS_RETURN);
    MPI_Aint ext;
    MPI_Type_extent(MPI_DOUBLE, &ext);
    CHECK(ext == 8);
    void *mem;
    CHECK_RC(MPI_Alloc_mem(1024, MPI_INFO_NULL, &mem), MPI_SUCCESS);
    ((char *)mem)[1023] = 1;
    CHECK_RC(MPI_Free_mem(mem), MPI_SUCCESS);

    /* Not provided yet: an error naming the call, not a crash. */
    MPI_File fh;
    CHECK_RC(MPI_File_open(MPI_COMM_SELF, "/tmp/x", MPI_MODE_RDONLY, MPI_INFO_NULL, &fh), MPI_ERR_UNSUPPORTED_OPERATION);
    CHECK_RC(MPI_Win_fence(0, MPI_WIN_NULL), MPI_ERR_UNSUPPORTED_OPERATION);
    CHECK(MPI_Aint_add(10, 5) == 15 && MPI_Aint_diff(10, 5) == 5);

    /* Errors under ERRORS_RETURN, then Finalize. */
    CHECK_RC(MPI_Init(&argc, &argv), MPI_ERR_OTHER);
    int failed = failures;
    int me;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    int all = 0;
    MPI_Allreduce(&failed, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK_RC(MPI_Finalize(), MPI_SUCCESS);
    MPI_Finalized(&flag);
    if (flag != 1) all++;
    if (me == 0) printf("env: %s (%d failed checks)\n", all ? "FAIL" : "PASS", all);
    return all ? 1 : 0;
}
