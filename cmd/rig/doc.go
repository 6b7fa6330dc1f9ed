// Command rig is the CLI of the rig latency test rig. It stays thin: each
// command defines its flags and parses them in its own file, then calls
// into the packages. One grammar for all of them:
//
//   - rig COMMAND [SUBCOMMAND] [ARGUMENTS] [flags]; flags go before,
//     between or after the arguments, and "--" ends them.
//   - --format chooses the form of a command's report or table (text, md,
//     csv, json: the ones the command has); --json is short for
//     --format json.
//   - Errors are printed once, by finish, as "rig: COMMAND: what"; bad
//     input of any kind maps to exit status 2 in exitCode alone.
//   - rig -h, rig COMMAND -h, rig completion bash|zsh and rig man DIR are
//     all generated from the same flag definitions (describe).
//
// Exit status (exitStatus; rig -h and rig(1) print the same table):
//
//	0 success; rig check: every check ok or skipped; -h and --version
//	1 failure: the command could not do its work (a host, a probe, a file); what
//	  it changed is put back
//	2 bad input: flags, arguments, a scenario the file or the hosts refute, a
//	  missing interface or CPU, no hardware stamps where demanded, a missing
//	  privilege, a pending journal (run rig restore)
//	3 done, with problems: rig report and rig compare read a damaged or
//	  incomplete run directory (what could be read is printed); rig check's worst
//	  result is warn
//	4 rig check: at least one check FAILed
package main
