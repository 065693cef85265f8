# session_status's probe on R: runs after prelude.R and replies what the Python probe
# prints: the R program, R's version, the working directory, resident memory in bytes
# (from /proc, 0 where there is none) and the versions of key packages, read from
# their DESCRIPTION files without loading them.

pk <- list()
for (n in c("IRkernel", "IRdisplay", "jsonlite", "data.table", "dplyr", "ggplot2", "tibble", "readr")) {
  v <- tryCatch(as.character(utils::packageVersion(n)), error = function(e) NULL)
  if (!is.null(v)) pk[[n]] <- v
}
rss <- 0
st <- tryCatch(readLines("/proc/self/status", warn = FALSE), error = function(e) character(0))
vm <- grep("^VmRSS:", st, value = TRUE)
if (length(vm) == 1) rss <- as.numeric(gsub("[^0-9]", "", vm)) * 1024
reply(list(executable = file.path(R.home("bin"), "R"),
           version = paste(R.version$major, R.version$minor, sep = "."),
           cwd = getwd(), rss = rss,
           packages = if (length(pk) == 0) structure(list(), names = character(0)) else pk))
