# libcoop against a fake daemon (client_lib), and coopctl's command line
# (coopctl_usage: bad usage exits 2, --help, and kernels, submit and top end
# to end against the fake, top also against a daemon older than TOP).
# Included from tests/CMakeLists.txt.
add_executable(test_client test_client.c)
target_link_libraries(test_client PRIVATE coop coopproto PkgConfig::CHECK Threads::Threads)
add_dependencies(test_client coopctl)

add_test(NAME client_lib COMMAND test_client)
set_tests_properties(client_lib PROPERTIES ENVIRONMENT "CK_RUN_SUITE=libcoop" TIMEOUT 120)
add_test(NAME coopctl_usage COMMAND test_client)
set_tests_properties(coopctl_usage PROPERTIES
  ENVIRONMENT "CK_RUN_SUITE=coopctl;COOPCTL=$<TARGET_FILE:coopctl>" TIMEOUT 120)
