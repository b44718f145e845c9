# Configuration refusals at coopd's start, table-driven (ctest
# daemon_refuses_configs, tests/CMakeLists.txt): each row writes an ini
# file, starts coopd with it (a real start, not --check-config, so the
# journal and the kernel directories are opened as at any start) and wants
# exit status 1 (2 for a bad command line) and a message on stderr that
# names the key or the file. A row that coopd accepted would try to run:
# the TIMEOUT keeps such a failure from hanging the test. One control row
# shows that a file with every key added since the first release passes.
# Every refusal comes before the device is opened, so the whole table takes
# well under a second per row on PoCL.
#
# cmake -DCOOPD=coopd -DKERNELS=DIR -DWORK=DIR -DCUDA=ON|OFF -P daemon_config.cmake

foreach(v COOPD KERNELS WORK CUDA)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "daemon_config.cmake: -D${v}= is required")
  endif()
endforeach()
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(failures 0)
set(rows 0)

# run(NAME RC REGEX INI ARGS...): the ini text is written to WORK/NAME/coopd.ini
# (no file when INI is "-"); @DIR@ in INI and ARGS stands for WORK/NAME.
function(run name want_rc want_re ini)
  set(dir ${WORK}/${name})
  file(MAKE_DIRECTORY ${dir})
  set(args "")
  if(NOT ini STREQUAL "-")
    string(REPLACE "@DIR@" "${dir}" ini "${ini}")
    file(WRITE ${dir}/coopd.ini "${ini}")
    list(APPEND args --config ${dir}/coopd.ini)
  endif()
  foreach(a ${ARGN})
    string(REPLACE "@DIR@" "${dir}" a "${a}")
    list(APPEND args "${a}")
  endforeach()
  execute_process(COMMAND ${COOPD} ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out
    ERROR_VARIABLE err TIMEOUT 60)
  math(EXPR n "${rows} + 1")
  set(rows ${n} PARENT_SCOPE)
  if(NOT rc STREQUAL "${want_rc}" OR NOT "${out}${err}" MATCHES "${want_re}")
    message("FAIL ${name}: want status ${want_rc} and /${want_re}/, got status ${rc}:\n"
            "${out}${err}")
    math(EXPR f "${failures} + 1")
    set(failures ${f} PARENT_SCOPE)
  else()
    string(STRIP "${err}" first)
    string(REGEX REPLACE "\n.*" "" first "${first}")
    message("ok   ${name}: ${first}")
  endif()
endfunction()

# Every row but the one about it names a socket (an absolute path in WORK)
# and the kernels on the command line, which take precedence over the file.
set(std --socket @DIR@/coop.sock --kernels ${KERNELS})

# ---- the file itself ----
run(missing_file 1 "none\\.ini: cannot open: No such file or directory" -
  --config ${WORK}/none.ini ${std})
file(MAKE_DIRECTORY ${WORK}/config_is_dir)
run(file_is_a_directory 1 "config_is_dir: cannot read: Is a directory" -
  --config ${WORK}/config_is_dir ${std})
run(syntax_error 1 "coopd\\.ini:2: syntax error" "[jobs]\n[limits\n" ${std})

# ---- unknown keys and bad values: FILE:LINE: and the key ----
run(unknown_key 1 "coopd\\.ini:2: unknown key \\[jobs\\] watchdog\n" "[jobs]\nwatchdog = 5\n" ${std})
run(unknown_section 1 "coopd\\.ini:3: unknown key \\[job\\] hang_ms" "\n[job]\nhang_ms = 5\n" ${std})
run(bad_hang_ms 1 "coopd\\.ini:2: \\[jobs\\] hang_ms: bad value \"2147483649\""
  "[jobs]\nhang_ms = 2147483649\n" ${std})
run(bad_gather_budget_ms 1 "coopd\\.ini:3: \\[jobs\\] gather_budget_ms: bad value \"-1\""
  "[jobs]\nhang_ms = 0\ngather_budget_ms = -1\n" ${std})
run(bad_watchdog_ms 1 "\\[jobs\\] watchdog_ms: bad value \"1s\"" "[jobs]\nwatchdog_ms = 1s\n"
  ${std})
run(bad_max_bytes 1 "\\[limits\\] max_bytes_per_client: bad value \"2T\""
  "[limits]\nmax_bytes_per_client = 2T\n" ${std})
# a value past the key's range names the range (from the key table, every numeric key)
run(arena_mb_over_range 1 "coopd\\.ini:2: \\[device\\] arena_mb: bad value \"100000\" \\(want 0\\.\\.65536\\)"
  "[device]\narena_mb = 100000\n" ${std} --check-config)
run(socket_mode_over_range 1 "\\[server\\] socket_mode: bad value \"1000\" \\(want an octal mode 0\\.\\.0777\\)"
  "[server]\nsocket_mode = 1000\n" ${std})
run(bad_level 1 "\\[log\\] level: bad value \"loud\"" "[log]\nlevel = loud\n" ${std})
run(bad_syslog 1 "\\[log\\] syslog: bad value \"maybe\"" "[log]\nsyslog = maybe\n" ${std})
run(bad_socket_mode 1 "\\[server\\] socket_mode: bad value \"0666x\""
  "[server]\nsocket_mode = 0666x\n" ${std})
# --help says what those statuses are (it named 0 and 1 only)
run(help_exit_statuses 0 "1 on a start-up error.*2 on bad usage" - --help)
# the same through --set: a bad command line, status 2
run(bad_set_flag 2 "unknown key \\[jobs\\] hang\n" - ${std} --set jobs.hang=1)
run(bad_set_value 2 "\\[jobs\\] hang_ms: bad value \"x\"" - ${std} --set jobs.hang_ms=x)
# a backend that is none of the three words is a value its key cannot take
# (it was refused among the checks across keys, status 1)
run(bad_backend_flag 2 "\\[device\\] backend: \"vulkan\" is not one of auto, opencl, cuda" -
  ${std} --backend vulkan)
run(bad_backend_set 2 "\\[device\\] backend: \"vulkan\" is not one of" - ${std}
  --set device.backend=vulkan)

# ---- cross-field rules (config_validate) ----
run(socket_relative 1 "\\[server\\] socket: \"coop\\.sock\" must be an absolute path"
  "[server]\nsocket = coop.sock\n" --kernels ${KERNELS})
run(journal_relative 1 "\\[server\\] journal: \"coop\\.jobs\" must be an absolute path or off"
  "[server]\njournal = coop.jobs\n" ${std})
run(kernels_dirs_empty 1 "\\[kernels\\] dirs: empty; name at least one directory"
  "[kernels]\ndirs =\n" --socket @DIR@/coop.sock)
foreach(key max_jobs_per_client max_clients arena_mb)
  set(section limits)
  if(key STREQUAL "max_clients")
    set(section server)
  elseif(key STREQUAL "arena_mb")
    set(section device)
  endif()
  run(zero_${key} 1 "\\[${section}\\] ${key}: 0 is not allowed \\(want at least 1\\)"
    "[${section}]\n${key} = 0\n" ${std})
endforeach()
run(local_size_3 1 "\\[device\\] local_size: 3 is not a power of two" "[device]\nlocal_size = 3\n"
  ${std})
run(devices_trailing_comma 1 "\\[device\\] devices: \"0,\": want empty, all"
  "[device]\ndevices = 0,\n" ${std})
run(devices_nine 1 "\\[device\\] devices: \"0,1,2,3,4,5,6,7,0\": want empty, all, or up to 8"
  "[device]\ndevices = 0,1,2,3,4,5,6,7,0\n" ${std})
run(backend_unknown 1 "\\[device\\] backend: \"vulkan\" is not one of auto, opencl, cuda"
  "[device]\nbackend = vulkan\n" ${std})
if(NOT CUDA)
  run(backend_not_built 1 "\\[device\\] backend: \"cuda\" is not built in \\(this coopd has: opencl\\)"
    "[device]\nbackend = cuda\n" ${std})
endif()

# ---- kernel directories (read at start; a reload only logs these) ----
file(MAKE_DIRECTORY ${WORK}/kernel_bad_kind/k ${WORK}/kernel_no_directive/k
  ${WORK}/kernel_dir_empty/k)
file(WRITE ${WORK}/kernel_bad_kind/k/bad.cl
  "//@coop name=bad kind=sometimes args=u32\nvoid bad(struct coop_ctx *c) {}\n")
run(kernel_bad_kind 1 "bad\\.cl:1: kind must be cooperative or noncooperative" -
  --socket @DIR@/coop.sock --kernels @DIR@/k)
file(WRITE ${WORK}/kernel_no_directive/k/plain.cl "void plain(struct coop_ctx *c) {}\n")
run(kernel_no_directive 1 "plain\\.cl:1: first line is not a //@coop directive" -
  --socket @DIR@/coop.sock --kernels @DIR@/k)
run(kernel_dir_empty 1 "no \\*\\.cl kernel in .*kernel_dir_empty/k" -
  --socket @DIR@/coop.sock --kernels @DIR@/k)
run(kernel_dir_missing 1 "kernel directory .*/nowhere: No such file or directory" -
  --socket @DIR@/coop.sock --kernels ${KERNELS}:@DIR@/nowhere)

# ---- the journal: a symlink is refused (O_NOFOLLOW), nothing is created ----
file(MAKE_DIRECTORY ${WORK}/journal_symlink)
file(CREATE_LINK ${WORK}/journal_symlink/target ${WORK}/journal_symlink/jobs SYMBOLIC)
run(journal_symlink 1 "journal .*journal_symlink/jobs: a symbolic link \\(uid [0-9]+\\); coopd does not follow one" -
  ${std} --set server.journal=@DIR@/jobs)
if(EXISTS ${WORK}/journal_symlink/target)
  message("FAIL journal_symlink: coopd created the symlink's target")
  math(EXPR failures "${failures} + 1")
endif()
if(EXISTS ${WORK}/journal_symlink/coop.sock)
  message("FAIL journal_symlink: coopd created its socket all the same")
  math(EXPR failures "${failures} + 1")
endif()

# ---- [metrics] listen: refused at load, before any port is bound ----
run(metrics_listen_no_port 1 "\\[metrics\\] listen: \"127\\.0\\.0\\.1\": want ADDR:PORT"
  "[metrics]\nlisten = 127.0.0.1\n" ${std})
run(metrics_listen_hostname 1 "\\[metrics\\] listen: \"example\\.org:9464\": want ADDR:PORT"
  "[metrics]\nlisten = example.org:9464\n" ${std})
run(metrics_listen_bad_port 1 "\\[metrics\\] listen: \"127\\.0\\.0\\.1:65536\": want ADDR:PORT"
  "[metrics]\nlisten = 127.0.0.1:65536\n" ${std})
run(metrics_listen_bare_v6 1 "\\[metrics\\] listen: \"::1:9464\": want ADDR:PORT"
  "[metrics]\nlisten = ::1:9464\n" ${std})
run(metrics_listen_not_loopback 1
  "\\[metrics\\] listen: \"0\\.0\\.0\\.0:9464\" is not a loopback address.*allow_remote = yes"
  "[metrics]\nlisten = 0.0.0.0:9464\n" ${std} --check-config)
run(metrics_listen_v6_any 1 "\"\\[::\\]:9464\" is not a loopback address"
  "[metrics]\nlisten = [::]:9464\n" ${std})
run(metrics_timeout_zero 1 "\\[metrics\\] timeout_ms: 0 is not allowed \\(want at least 1\\)"
  "[metrics]\nlisten = 127.0.0.1:9464\ntimeout_ms = 0\n" ${std})
run(priority_users_bad 1 "\\[limits\\] priority_users: \"alice @:3\": want entries NAME:N"
  "[limits]\npriority_users = alice @:3\n" ${std})
run(priority_users_over_100 1 "\\[limits\\] priority_users: \"bob:101\""
  "[limits]\npriority_users = bob:101\n" ${std})
run(priority_users_unknown 1 "\\[limits\\] priority_users: no user named \"nosuchuser\""
  "[limits]\npriority_users = nosuchuser:5\n" ${std})
# a check across keys has no line: the message names the file read
run(checkpoint_ms_too_short 1 "\\[jobs\\] checkpoint_ms: 50 is too short: 0 \\(no checkpoints\\) or at least 100 ms \\(settings: [^)]*/checkpoint_ms_too_short/coopd\\.ini\\)"
  "[jobs]\ncheckpoint_ms = 50\n" ${std})
run(max_priority_over_100 1 "\\[limits\\] max_priority: bad value \"101\""
  "[limits]\nmax_priority = 101\n" ${std})
run(metrics_allow_remote_bad 1 "\\[metrics\\] allow_remote: bad value \"perhaps\""
  "[metrics]\nallow_remote = perhaps\n" ${std})
run(max_registers_too_few 1 "\\[device\\] max_registers: 8: want 0 \\(no cap\\) or 16\\.\\.255"
  "[device]\nmax_registers = 8\n" ${std})
run(max_registers_too_many 1 "\\[device\\] max_registers: bad value \"256\""
  "[device]\nmax_registers = 256\n" ${std})
run(kernel_widths_bad 1 "\\[device\\] kernel_widths: bad value \"some\""
  "[device]\nkernel_widths = some\n" ${std})

# a subordinate ids file that another user could change: they could take
# their range out of it (daemon/subids.h)
file(MAKE_DIRECTORY ${WORK}/subids_writable)
file(WRITE ${WORK}/subids_writable/subuid "alice:100000:65536\n")
file(CHMOD ${WORK}/subids_writable/subuid PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ
  GROUP_WRITE WORLD_READ WORLD_WRITE)
run(subids_writable 1
  "\\[limits\\] subordinate_ids: .*subuid: writable by others \\(uid [0-9]+, mode 0666\\)"
  "[limits]\nsubordinate_ids = @DIR@/subuid\n" ${std})
run(subids_relative 1 "\\[limits\\] subordinate_ids: \"subuid\" must be an absolute path or off"
  "[limits]\nsubordinate_ids = subuid\n" ${std})

# a flag over a key the file sets: --check-config says the value, the flag and the file's
# value it overrides (an edit of the file did nothing, and nothing said so)
run(flags_override_file 0
  "\\[server\\] socket = \"[^\"]*/flags_override_file/coop\\.sock\" from the command line \\(--socket\\), overriding \"/run/elsewhere\\.sock\" in [^\n]*/flags_override_file/coopd\\.ini\n\\[kernels\\] dirs = [^\n]* from the command line \\(--kernels\\)\n\\[server\\] journal = \"off\" from the command line \\(--set server\\.journal\\), overriding \"/var/lib/elsewhere\\.jobs\" in .*configuration OK"
  "[server]\nsocket = /run/elsewhere.sock\njournal = /var/lib/elsewhere.jobs\n"
  ${std} --set server.journal=off --check-config)

# ---- control: the keys added since (devices, journal, the watchdog's, device_mb) ----
run(control_new_keys 0
  "devices=0,0 .*max_registers=128 kernel_widths=no arena_mb=256 device_mb=64 .*journal=off.*watchdog_ms=250 grace_ms=5000 gather_budget_ms=1500 hang_ms=700.*metrics: listen=0\\.0\\.0\\.0:9464 allow_remote=yes max_connections=4 timeout_ms=2000.*configuration OK"
  "[device]\ndevices = 0,0\nmax_registers = 128\ndevice_mb = 64\n[server]\njournal = off\n[jobs]\nwatchdog_ms = 250\ngather_budget_ms = 1500\nhang_ms = 700\n[metrics]\nlisten = 0.0.0.0:9464\nallow_remote = yes\nmax_connections = 4\ntimeout_ms = 2000\n"
  ${std} --check-config)

message("daemon_config: ${rows} rows, ${failures} failed")
if(failures GREATER 0)
  message(FATAL_ERROR "daemon_config: ${failures} of ${rows} rows failed")
endif()
