/* Subcommands that live in their own files; main.c dispatches on argv[1]. */
#ifndef PTXGEN_CLI_CMD_H
#define PTXGEN_CLI_CMD_H
/* ptxgen sim FILE.ptx --launch RECORD.json ... (cmd_sim.c); argv after "sim". Returns the exit code. */
int cmd_sim(int argc, char **argv);
#endif
