# cmake -DAR=<ar> -DMRI=<script> -DOUT=<archive> -P GelukitMergeArchives.cmake
#
# Merges static archives with an ar MRI script ("create / addlib ... / save"), so the install
# tree ships one archive per component instead of one per kernel library. GNU ar (and the
# aarch64 cross ar) read the script on stdin; a failure stops the build.
foreach (var IN ITEMS AR MRI OUT)
    if (NOT DEFINED ${var})
        message(FATAL_ERROR "GelukitMergeArchives.cmake: -D${var}=... is required")
    endif ()
endforeach ()
file(REMOVE "${OUT}")
execute_process(COMMAND "${AR}" -M INPUT_FILE "${MRI}" RESULT_VARIABLE rc ERROR_VARIABLE err)
if (NOT rc EQUAL 0 OR NOT EXISTS "${OUT}")
    message(FATAL_ERROR "gelukit: merging archives into ${OUT} failed (${AR} -M, exit ${rc}): ${err}")
endif ()
