/* sched/cmd/gangctl.c: the tenant and operator CLI (also `kubectl gang`).
 *
 * Owns: nothing yet but its usage text. The commands below arrive with the CLI issue; until then
 * every command says so and exits 2, so scripts can tell "not built yet" from success.
 */
#include <stdio.h>
#include <string.h>

static void usage(FILE *f)
{
    fputs("usage: gangctl COMMAND [FLAGS]      (also: kubectl gang COMMAND)\n"
          "\n"
          "tenants:   quota [QUEUE], queues, jobs [-q QUEUE] [-A], explain NS/PODGROUP, top,\n"
          "           reservations\n"
          "operators: queue hold|resume|drain QUEUE, reserve ..., checkpoint NS/PODGROUP\n"
          "\n"
          "Not implemented yet: this build of gangctl only prints this help.\n",
          f);
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    fprintf(stderr, "gangctl: command '%s' is not implemented yet\n", argv[1]);
    return 2;
}
