# ctest gelukit_install.example (tests/CMakeLists.txt), run as
#   cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... -DGENERATOR=... -DMAKE_PROGRAM=...
#         -DCXX=... [-DTOOLCHAIN_FILE=...] [-DEMULATOR=a|b|c] -P GelukitInstallTest.cmake
#
# What a user does, from the build tree to a running program, in a scratch directory:
#  1. cmake --install <build> --prefix <work>/prefix
#  2. configure, build and run examples/ (find_package(gelukit CONFIG REQUIRED)) against it,
#     with the same toolchain file for a cross build and the program under the emulator;
#  3. (cross builds) configure examples/ for the host against the cross prefix: the package must
#     refuse with its wrong-architecture message;
#  4. compile the same example with `<CXX> gelu_ffn.cpp $(pkg-config --cflags --libs gelukit)`
#     and run it.
# Any failing step stops with FATAL_ERROR (non-zero exit, the test fails).
foreach (var IN ITEMS BUILD_DIR SOURCE_DIR WORK_DIR GENERATOR CXX)
    if (NOT DEFINED ${var})
        message(FATAL_ERROR "GelukitInstallTest.cmake: -D${var}=... is required")
    endif ()
endforeach ()
string(REPLACE "|" ";" emulator "${EMULATOR}")

function(step what)
    message(STATUS "gelukit install test: ${what}")
    execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
    message("${out}")
    if (NOT rc EQUAL 0)
        message(FATAL_ERROR "gelukit install test: '${what}' failed (exit ${rc})")
    endif ()
endfunction()

set(prefix "${WORK_DIR}/prefix")
file(REMOVE_RECURSE "${WORK_DIR}")
step("install into ${prefix}" "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${prefix}")

set(configure_args -S "${SOURCE_DIR}/examples" -B "${WORK_DIR}/example-build" -G "${GENERATOR}"
    -DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=${prefix}")
if (MAKE_PROGRAM)
    list(APPEND configure_args "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
endif ()
if (TOOLCHAIN_FILE)
    list(APPEND configure_args "-DCMAKE_TOOLCHAIN_FILE=${TOOLCHAIN_FILE}")
endif ()
step("configure examples/ with find_package(gelukit)" "${CMAKE_COMMAND}" ${configure_args})
step("build examples/" "${CMAKE_COMMAND}" --build "${WORK_DIR}/example-build")
step("run the CMake-built example" ${emulator} "${WORK_DIR}/example-build/gelukit_example")

if (TOOLCHAIN_FILE)
    message(STATUS "gelukit install test: a host project must be refused by the ${prefix} package")
    execute_process(
        COMMAND "${CMAKE_COMMAND}" -S "${SOURCE_DIR}/examples" -B "${WORK_DIR}/host-example-build"
                -G "${GENERATOR}" "-DCMAKE_PREFIX_PATH=${prefix}"
        RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
    string(REGEX REPLACE "[ \t\r\n]+" " " flat "${out}")  # CMake wraps the message
    if (rc EQUAL 0 OR NOT flat MATCHES "[a-z0-9-]+ kernels; this project targets")
        message(FATAL_ERROR "gelukit install test: a host project was not refused clearly (exit ${rc}):\n${out}")
    endif ()
endif ()

find_program(PKG_CONFIG NAMES pkg-config pkgconf REQUIRED)
execute_process(
    COMMAND "${CMAKE_COMMAND}" -E env "PKG_CONFIG_PATH=${prefix}/lib/pkgconfig" PKG_CONFIG_LIBDIR=
            "${PKG_CONFIG}" --cflags --libs gelukit
    RESULT_VARIABLE rc OUTPUT_VARIABLE flags OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_VARIABLE err)
if (NOT rc EQUAL 0)
    message(FATAL_ERROR "gelukit install test: pkg-config --cflags --libs gelukit failed: ${err}")
endif ()
message(STATUS "pkg-config --cflags --libs gelukit: ${flags}")
separate_arguments(flags UNIX_COMMAND "${flags}")
step("compile the example with pkg-config's flags"
     "${CXX}" -O2 "${SOURCE_DIR}/examples/gelu_ffn.cpp" ${flags} -o "${WORK_DIR}/gelukit_example_pkgconfig")
step("run the pkg-config-built example" ${emulator} "${WORK_DIR}/gelukit_example_pkgconfig")
