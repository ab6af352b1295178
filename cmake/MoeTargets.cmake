# Target helpers: warnings, sanitizers, one static library per module, tests with ctest labels.

function(moe_set_options target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter>
    $<$<COMPILE_LANGUAGE:CUDA>:-lineinfo -Xptxas=-warn-spills,-warn-lmem-usage>)
  if(MOE_SANITIZE)
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined>)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
endfunction()

# moe_module(NAME <name> DEPS <targets...>): static library moe_<name> from src/<dir>/*.cc.
function(moe_module)
  cmake_parse_arguments(M "" "NAME;DIR" "DEPS;EXTRA_SOURCES" ${ARGN})
  if(NOT M_DIR)
    set(M_DIR ${M_NAME})
  endif()
  file(GLOB srcs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/${M_DIR}/*.cc)
  if(NOT srcs AND NOT M_EXTRA_SOURCES)  # header-only module
    add_library(moe_${M_NAME} INTERFACE)
    target_include_directories(moe_${M_NAME} INTERFACE ${CMAKE_SOURCE_DIR}/src)
    target_link_libraries(moe_${M_NAME} INTERFACE ${M_DEPS})
    return()
  endif()
  add_library(moe_${M_NAME} STATIC ${srcs} ${M_EXTRA_SOURCES})
  target_include_directories(moe_${M_NAME} PUBLIC ${CMAKE_SOURCE_DIR}/src)
  target_link_libraries(moe_${M_NAME} PUBLIC ${M_DEPS})
  moe_set_options(moe_${M_NAME})
endfunction()

# moe_test(NAME <name> SOURCES <...> DEPS <...> LABELS <...>): gtest binary registered with ctest.
function(moe_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_DEPS} GTest::gtest GTest::gtest_main)
  target_compile_definitions(${T_NAME} PRIVATE MOE_SOURCE_DIR="${CMAKE_SOURCE_DIR}"
                                               MOE_BINARY_DIR="${CMAKE_BINARY_DIR}")
  moe_set_options(${T_NAME})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 600)
  endif()
  gtest_discover_tests(${T_NAME} PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT}
                       DISCOVERY_TIMEOUT 120)
endfunction()
