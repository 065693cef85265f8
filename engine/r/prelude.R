# The start of every helper that kernel-mcp runs silently in an R (IRkernel) kernel
# (get_value, list_variables, session_status's probe; see engine/rhelpers.go). The server runs
#   local({ .km_args <- "<JSON>"; tryCatch({ <prelude.R> <helper.R> }, error = ...) },
#         envir = new.env(parent = baseenv()))
# as a silent execute: the helper's names live in the local environment, so nothing is
# defined in the user's global environment, and the execution count does not move. An
# error it stops with is replied as {"km_error": message} (IRkernel reports no error of
# a silent execute).
# It defines:
#   args         the tool's arguments, decoded from .km_args
#   ns           the user's environment (the global one)
#   typename(x)  the value's class, e.g. "data.frame", "numeric", "factor"
#   to_json(x)   x as JSON: NA, NaN and Inf as null, factors as their labels, length-1
#                vectors as scalars (wrap a vector in I() to keep it an array)
#   reply(obj)   publishes obj as JSON in one display_data of the MIME type the server
#                reads (ResultMIME in query.go), refusing more than args$limit bytes

args <- jsonlite::fromJSON(.km_args, simplifyVector = FALSE)
ns <- globalenv()

typename <- function(x) class(x)[1]

to_json <- function(x, dataframe = "rows") {
  jsonlite::toJSON(x, auto_unbox = TRUE, na = "null", null = "null", digits = NA,
                   POSIXt = "ISO8601", factor = "string", dataframe = dataframe,
                   matrix = "rowmajor", json_verbatim = TRUE)
}

reply <- function(obj, json = NULL) {
  s <- if (is.null(json)) to_json(obj) else json
  n <- nchar(s, type = "bytes")
  if (!is.null(args$limit) && n > args$limit) {
    stop(sprintf("the value is %.0f bytes as JSON, more than the %.0f get_value returns; select a part of it (head(df, 100), x[1:100])", n, args$limit), call. = FALSE)
  }
  # IRkernel sends the bundle's values as JSON strings: the server decodes it.
  data <- list()
  data[["application/vnd.kernel-mcp+json"]] <- as.character(s)
  IRdisplay::publish_mimebundle(data)
  invisible(NULL)
}
