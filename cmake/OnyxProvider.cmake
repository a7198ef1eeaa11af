set(ONYX_PROVIDER_EXPORTS_MAP ${CMAKE_CURRENT_LIST_DIR}/provider_exports.map)
# onyx_add_provider(NAME SOURCES ... [LIBRARIES ...] [INCLUDES ...]
#                   [OUTPUT_DIR dir] [NO_INSTALL])
#
# The one way to build a provider: a MODULE library named onyx_provider_<NAME>
# that exports only the ABI entry symbol (version script) and lands in the
# providers folder, both in the build tree and when installed.
function(onyx_add_provider NAME)
  cmake_parse_arguments(ARG "NO_INSTALL" "OUTPUT_DIR" "SOURCES;LIBRARIES;INCLUDES" ${ARGN})
  if(NOT ARG_OUTPUT_DIR)
    set(ARG_OUTPUT_DIR ${ONYX_PROVIDER_OUTPUT_DIR})
  endif()
  set(target onyx_provider_${NAME})
  add_library(${target} MODULE ${ARG_SOURCES})
  target_link_libraries(${target} PRIVATE Onyx::provider_sdk ${ARG_LIBRARIES})
  target_include_directories(${target} PRIVATE ${ARG_INCLUDES})
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX,C>:${ONYX_WARNINGS}>)
  set_target_properties(${target} PROPERTIES
    PREFIX "lib"
    LIBRARY_OUTPUT_DIRECTORY ${ARG_OUTPUT_DIR})
  target_link_options(${target} PRIVATE "LINKER:--version-script=${ONYX_PROVIDER_EXPORTS_MAP}")
  # Every symbol resolved at link time, except in the fuzz build: clang's
  # sanitizer runtime lives in the fuzzer executable, not in plugins.
  if(NOT ONYX_BUILD_FUZZERS)
    target_link_options(${target} PRIVATE "LINKER:--no-undefined")
  endif()
  if(NOT ARG_NO_INSTALL)
    install(TARGETS ${target} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/onyx/providers)
  endif()
endfunction()
