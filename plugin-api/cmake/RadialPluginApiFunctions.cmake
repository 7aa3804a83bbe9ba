# RadialPluginApiFunctions.cmake — how a runtime plugin is built and checked, for radial's own
# tree and for third parties (installed next to RadialPluginApiConfig.cmake). Issue 7.

# radial_hide_plugin_symbols(<target>)
#
# Compiles <target> — a plugin, or a static library linked into one — so that nothing but the
# entry symbol can leak out of the plugin: position-independent, hidden visibility (inline
# functions too), and, under GCC, template statics kept out of STB_GNU_UNIQUE, which would pin the
# .so in memory and export them.
function(radial_hide_plugin_symbols target)
  set_target_properties(${target} PROPERTIES
    POSITION_INDEPENDENT_CODE ON
    CXX_VISIBILITY_PRESET hidden
    C_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-fno-gnu-unique>)
  endif()
endfunction()

# radial_add_runtime_plugin(<target> [OUTPUT_NAME <name>] SOURCES <src>...)
#
# Builds a runtime plugin the way the ABI requires: a MODULE library named <name>.so (no "lib"
# prefix), compiled with hidden visibility, linked with a version script that exports only
# radial_runtime_plugin_entry, with no undefined symbols (-z defs) and no re-exported static
# libraries. Links the plugin API (RadialPluginApi::PluginApi).
function(radial_add_runtime_plugin target)
  cmake_parse_arguments(ARG "" "OUTPUT_NAME" "SOURCES" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "radial_add_runtime_plugin(${target}): SOURCES is required")
  endif()
  add_library(${target} MODULE ${ARG_SOURCES})
  if(NOT ARG_OUTPUT_NAME)
    set(ARG_OUTPUT_NAME ${target})
  endif()
  # One version script for every plugin: the file beside this one, in the source tree and in the
  # installed package alike.
  set(version_script ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/runtime-plugin.version)
  set_target_properties(${target} PROPERTIES
    PREFIX ""
    OUTPUT_NAME ${ARG_OUTPUT_NAME}
    LINK_DEPENDS ${version_script})
  radial_hide_plugin_symbols(${target})
  target_link_options(${target} PRIVATE
    "LINKER:--version-script=${version_script}"
    "LINKER:-z,defs"
    "LINKER:--exclude-libs,ALL")
  if(TARGET Radial::PluginApi)
    target_link_libraries(${target} PRIVATE Radial::PluginApi)
  else()
    target_link_libraries(${target} PRIVATE RadialPluginApi::PluginApi)
  endif()
endfunction()

# radial_add_conformance_test(NAME <test> PLUGIN <target|path> [CONFIG <file.toml>]
#                             [IMAGE <image>] [BUDGET <seconds>] [TIMEOUT <seconds>]
#                             [ARGS <arg>...])
#
# Registers a CTest test that runs radial-conformance against the plugin: PLUGIN is a target
# made with radial_add_runtime_plugin() or the path of a .so; CONFIG a TOML file whose
# [run.<id>] table is passed to create; IMAGE the image the boxes run; BUDGET the longest the
# harness waits for one plugin call (default 60 s); TIMEOUT the CTest timeout (default 900 s);
# ARGS more harness arguments (e.g. --gtest_filter=...). Uses the harness built in radial's tree
# when there is one, else the installed one.
function(radial_add_conformance_test)
  cmake_parse_arguments(ARG "" "NAME;PLUGIN;CONFIG;IMAGE;BUDGET;TIMEOUT" "ARGS" ${ARGN})
  if(NOT ARG_NAME OR NOT ARG_PLUGIN)
    message(FATAL_ERROR "radial_add_conformance_test: NAME and PLUGIN are required")
  endif()
  if(TARGET radial-conformance)
    set(harness $<TARGET_FILE:radial-conformance>)
  elseif(TARGET RadialPluginApi::radial-conformance)
    set(harness $<TARGET_FILE:RadialPluginApi::radial-conformance>)
  else()
    message(FATAL_ERROR "radial_add_conformance_test(${ARG_NAME}): the radial-conformance "
                        "harness is not installed with this RadialPluginApi package; install "
                        "the radial-plugin-dev package (or cmake --install --component dev)")
  endif()
  if(TARGET ${ARG_PLUGIN})
    set(plugin $<TARGET_FILE:${ARG_PLUGIN}>)
  else()
    get_filename_component(plugin "${ARG_PLUGIN}" ABSOLUTE)
  endif()
  set(args --plugin ${plugin})
  if(ARG_CONFIG)
    get_filename_component(config "${ARG_CONFIG}" ABSOLUTE)
    list(APPEND args --config ${config})
  endif()
  if(ARG_IMAGE)
    list(APPEND args --image ${ARG_IMAGE})
  endif()
  if(ARG_BUDGET)
    list(APPEND args --budget ${ARG_BUDGET})
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 900)
  endif()
  add_test(NAME ${ARG_NAME} COMMAND ${harness} ${args} ${ARG_ARGS})
  # The test passes on the harness's PASS verdict line, not on an exit status alone: a harness
  # that ended before its verdict (a crash in a plugin thread after a clean exit path) fails.
  # CTest prints a passing test's output only with -V; the verdict line is in it.
  set_tests_properties(${ARG_NAME} PROPERTIES TIMEOUT ${ARG_TIMEOUT}
    PASS_REGULAR_EXPRESSION "radial-conformance: PASS "
    FAIL_REGULAR_EXPRESSION "radial-conformance: FAIL ")
endfunction()
