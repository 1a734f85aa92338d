/* Ports and names: the first half accepts on a published port, the second half looks it
 * up and connects; then two processes join over a TCP socket. */
#include <mpi.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "check.h"

int main(int argc, char **argv) {
    int rank, size, s;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (size < 2) FINISH("ports");
    int server = rank < size / 2;
    MPI_Comm half, inter;
    MPI_Comm_split(MPI_COMM_WORLD, server, rank, &half);
    char port[MPI_MAX_PORT_NAME] = "";
    if (server && rank == 0) {
        CHECK_RC(MPI_Open_port(MPI_INFO_NULL, port), MPI_SUCCESS);
        CHECK_RC(MPI_Publish_name("commcore-mpi-ports-test", MPI_INFO_NULL, port), MPI_SUCCESS);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (server) {
        CHECK_RC(MPI_Comm_accept(port, MPI_INFO_NULL, 0, half, &inter), MPI_SUCCESS);
    } else {
        if (rank == size / 2)
            CHECK_RC(MPI_Lookup_name("commcore-mpi-ports-test", MPI_INFO_NULL, port), MPI_SUCCESS);
        CHECK_RC(MPI_Comm_connect(port, MPI_INFO_NULL, 0, half, &inter), MPI_SUCCESS);
    }
    MPI_Comm_remote_size(inter, &s);
    CHECK(s == (server ? size - size / 2 : size / 2));
    int sum = -1;
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, inter);
    int want = 0;
    for (int r = server ? size / 2 : 0; r < (server ? size : size / 2); r++) want += r;
    CHECK(sum == want);
    CHECK_RC(MPI_Comm_disconnect(&inter), MPI_SUCCESS);
    if (server && rank == 0) {
        CHECK_RC(MPI_Unpublish_name("commcore-mpi-ports-test", MPI_INFO_NULL, port), MPI_SUCCESS);
        CHECK_RC(MPI_Close_port(port), MPI_SUCCESS);
    }
    char missing[MPI_MAX_PORT_NAME];
    if (rank == 0)
        CHECK_RC(MPI_Lookup_name("commcore-mpi-no-such-name", MPI_INFO_NULL, missing), MPI_ERR_NAME);

    /* Join: ranks 0 and 1 over a loopback socket. */
    if (rank < 2) {
        int fd, joined_rank, rs;
        struct sockaddr_in addr;
        socklen_t len = sizeof addr;
        memset(&addr, 0, sizeof addr);
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (rank == 0) {
            int listener = socket(AF_INET, SOCK_STREAM, 0);
            bind(listener, (struct sockaddr *)&addr, sizeof addr);
            listen(listener, 1);
            getsockname(listener, (struct sockaddr *)&addr, &len);
            int portno = ntohs(addr.sin_port);
            MPI_Send(&portno, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
            fd = accept(listener, NULL, NULL);
            close(listener);
        } else {
            int portno;
            MPI_Recv(&portno, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            addr.sin_port = htons(portno);
            fd = socket(AF_INET, SOCK_STREAM, 0);
            connect(fd, (struct sockaddr *)&addr, sizeof addr);
        }
        MPI_Comm joined;
        CHECK_RC(MPI_Comm_join(fd, &joined), MPI_SUCCESS);
        MPI_Comm_remote_size(joined, &rs);
        MPI_Comm_rank(joined, &joined_rank);
        CHECK(rs == 1 && joined_rank == 0);
        int other = -1;
        MPI_Sendrecv(&rank, 1, MPI_INT, 0, 0, &other, 1, MPI_INT, 0, 0, joined, MPI_STATUS_IGNORE);
        CHECK(other == 1 - rank);
        MPI_Comm_disconnect(&joined);
        close(fd);
    }
    MPI_Comm_free(&half);
    FINISH("ports");
}
