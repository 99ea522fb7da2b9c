# Install tree and CMake / pkg-config packages (`cmake --install build --prefix <dir>`).
#
# Layout of <prefix>:
#   include/gelukit/*.h                       public API (runtime/include/gelukit)
#   lib/libgelukit_runtime.a                  the C++ runtime (gelukit::runtime)
#   lib/libgelukit_gelu.a                     every GELU kernel library of the registry, merged
#   lib/libgelukit_ffn.a                      every FFN kernel library, merged
#   lib/libgelukit_cuda.a                     the CUDA kernel libraries (GELUKIT_CUDA builds)
#   lib/libgelukit_halide_runtime.a           the one Halide runtime all kernels share
#   lib/cmake/gelukit/gelukitConfig*.cmake    find_package(gelukit CONFIG)
#   lib/pkgconfig/gelukit.pc                  pkg-config --cflags --libs gelukit
#
# The kernel libraries are add_halide_library outputs (IMPORTED targets), which install(EXPORT)
# cannot export, so the package's targets are written by hand (cmake/gelukitConfig.cmake.in).
# One merged archive per component keeps the pkg-config line and the link line short; the
# merged members are the same objects the build tree links.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(_gelukit_package_dir "${PROJECT_BINARY_DIR}/package")

# _gelukit_merged_archive(<component> <kernel interface target>...): lib<component>.a from every
# kernel library linked into the interface targets (the registry's rows).
function(_gelukit_merged_archive component)
    set(archives)
    set(update_targets)
    foreach (iface IN LISTS ARGN)
        get_target_property(libs ${iface} INTERFACE_LINK_LIBRARIES)
        foreach (lib IN LISTS libs)
            list(APPEND archives "$<TARGET_FILE:${lib}>")
            # add_halide_library builds each library through "<lib>.update".
            if (TARGET ${lib}.update)
                list(APPEND update_targets ${lib}.update)
            endif ()
        endforeach ()
    endforeach ()
    set(out "${_gelukit_package_dir}/lib${component}${CMAKE_STATIC_LIBRARY_SUFFIX}")
    set(list_file "${_gelukit_package_dir}/${component}.archives")
    file(GENERATE OUTPUT "${list_file}" CONTENT "$<JOIN:${archives},\n>\n")
    add_custom_command(
        OUTPUT "${out}"
        COMMAND "${CMAKE_COMMAND}" "-DAR=${CMAKE_AR}" "-DINPUTS=${list_file}" "-DOUT=${out}"
                -P "${PROJECT_SOURCE_DIR}/cmake/GelukitMergeArchives.cmake"
        DEPENDS ${archives} "${list_file}" "${PROJECT_SOURCE_DIR}/cmake/GelukitMergeArchives.cmake"
        COMMENT "Merging the ${component} kernel libraries for the install tree"
        VERBATIM)
    add_custom_target(${component}_archive ALL DEPENDS "${out}")
    if (update_targets)
        add_dependencies(${component}_archive ${update_targets})
    endif ()
    install(FILES "${out}" DESTINATION "${CMAKE_INSTALL_LIBDIR}")
endfunction()

_gelukit_merged_archive(gelukit_gelu gelukit_gelu_kernels)
_gelukit_merged_archive(gelukit_ffn gelukit_ffn_kernels)
set(GELUKIT_PACKAGE_HAS_CUDA OFF)
if (GELUKIT_CUDA)
    _gelukit_merged_archive(gelukit_cuda gelukit_cuda_kernels gelukit_cuda_ffn_kernels)
    set(GELUKIT_PACKAGE_HAS_CUDA ON)
endif ()

install(TARGETS gelukit_runtime
        ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
        PUBLIC_HEADER DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/gelukit")
# Native builds make the Halide runtime a real target, cross builds an IMPORTED one: copy the
# file either way, under one name.
install(FILES "$<TARGET_FILE:gelukit_halide_runtime>"
        DESTINATION "${CMAKE_INSTALL_LIBDIR}"
        RENAME "libgelukit_halide_runtime${CMAKE_STATIC_LIBRARY_SUFFIX}")

set(GELUKIT_PACKAGE_ARCH "${GELUKIT_ARCH}")
set(_gelukit_cmake_dir "${CMAKE_INSTALL_LIBDIR}/cmake/gelukit")
configure_package_config_file(
    "${PROJECT_SOURCE_DIR}/cmake/gelukitConfig.cmake.in"
    "${_gelukit_package_dir}/gelukitConfig.cmake"
    INSTALL_DESTINATION "${_gelukit_cmake_dir}"
    PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_LIBDIR)
# 0.x: a minor version may change the API, so only the same major.minor is compatible.
write_basic_package_version_file(
    "${_gelukit_package_dir}/gelukitConfigVersion.cmake"
    VERSION "${PROJECT_VERSION}"
    COMPATIBILITY SameMinorVersion)
# A package holds one architecture's machine code. The check sits in the version file so that
# find_package skips an unsuitable package and goes on searching CMAKE_PREFIX_PATH (a config file
# that sets gelukit_FOUND FALSE would end the search there); when none fits, CMake lists each
# one with this annotated version.
if (GELUKIT_ARCH STREQUAL "x86-64")
    set(_gelukit_processor_regex "^(x86_64|AMD64|amd64)$")
else ()
    set(_gelukit_processor_regex "^(aarch64|arm64|ARM64)$")
endif ()
file(APPEND "${_gelukit_package_dir}/gelukitConfigVersion.cmake" "
# gelukit: the archives hold ${GELUKIT_ARCH} machine code only.
if (NOT CMAKE_SYSTEM_PROCESSOR MATCHES \"${_gelukit_processor_regex}\")
    set(PACKAGE_VERSION \"\${PACKAGE_VERSION} (${GELUKIT_ARCH} kernels; this project targets '\${CMAKE_SYSTEM_PROCESSOR}')\")
    set(PACKAGE_VERSION_UNSUITABLE TRUE)
endif ()
")
install(FILES "${_gelukit_package_dir}/gelukitConfig.cmake"
              "${_gelukit_package_dir}/gelukitConfigVersion.cmake"
        DESTINATION "${_gelukit_cmake_dir}")

# pkg-config: static archives only, so Libs lists the whole chain (runtime, kernels, Halide
# runtime, pthread and dl, which the Halide runtime needs for its thread pool and for dlopen of
# libcuda).
set(GELUKIT_PC_CUDA_LIB "")
if (GELUKIT_PACKAGE_HAS_CUDA)
    set(GELUKIT_PC_CUDA_LIB "-lgelukit_cuda ")
endif ()
configure_file("${PROJECT_SOURCE_DIR}/cmake/gelukit.pc.in" "${_gelukit_package_dir}/gelukit.pc" @ONLY)
install(FILES "${_gelukit_package_dir}/gelukit.pc" DESTINATION "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
