# radial_add_runtime_plugin(<target> [OUTPUT_NAME <name>] SOURCES <src>...)
#
# Builds a runtime plugin the way the ABI requires: a MODULE library named <name>.so (no "lib"
# prefix), compiled with hidden visibility, linked with a version script that exports only
# radial_runtime_plugin_entry, with no undefined symbols (-z defs) and no re-exported static
# libraries. Links Radial::PluginApi.
function(radial_add_runtime_plugin target)
  cmake_parse_arguments(ARG "" "OUTPUT_NAME" "SOURCES" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "radial_add_runtime_plugin(${target}): SOURCES is required")
  endif()
  add_library(${target} MODULE ${ARG_SOURCES})
  if(NOT ARG_OUTPUT_NAME)
    set(ARG_OUTPUT_NAME ${target})
  endif()
  set(version_script ${CMAKE_CURRENT_BINARY_DIR}/${target}.version)
  file(WRITE ${version_script} "{\n  global: radial_runtime_plugin_entry;\n  local: *;\n};\n")
  set_target_properties(${target} PROPERTIES
    PREFIX ""
    OUTPUT_NAME ${ARG_OUTPUT_NAME}
    CXX_VISIBILITY_PRESET hidden
    C_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    LINK_DEPENDS ${version_script})
  target_link_options(${target} PRIVATE
    "LINKER:--version-script=${version_script}"
    "LINKER:-z,defs"
    "LINKER:--exclude-libs,ALL")
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-fno-gnu-unique>)
  endif()
  if(TARGET Radial::PluginApi)
    target_link_libraries(${target} PRIVATE Radial::PluginApi)
  else()
    target_link_libraries(${target} PRIVATE RadialPluginApi::PluginApi)
  endif()
endfunction()
