# list_variables: the user's names (those ls() shows in the global environment) with
# class, shape or length, type and a short description, without ever printing a whole
# object: data frames and matrices by their shape, vectors and lists by their length and
# their first few items, anything else by its class; a data frame's columns are named
# up to args$max_columns. Runs after prelude.R; replies {variables: [...args$max], total}.

short <- function(x) {
  n <- length(x)
  head6 <- x[seq_len(min(6, n))]
  s <- if (is.character(head6) || is.factor(head6)) {
    ifelse(is.na(head6), "NA", encodeString(as.character(head6), quote = "\""))
  } else {
    format(head6, digits = 7, trim = TRUE)
  }
  s <- paste(s, collapse = " ")
  if (n > 6) s <- paste(s, "...")
  if (nchar(s) > 60) s <- paste0(substr(s, 1, 57), "...")
  s
}

describe <- function(name, x) {
  d <- list(name = name, type = typename(x))
  if (is.data.frame(x)) {
    d$shape <- I(dim(x))
    cols <- names(x)
    n <- if (is.null(args$max_columns)) 50 else args$max_columns
    more <- if (length(cols) > n) sprintf(", ... and %d more", length(cols) - n) else ""
    d$repr <- sprintf("%s %d rows x %d columns: %s%s", typename(x), nrow(x), ncol(x), paste(utils::head(cols, n), collapse = ", "), more)
  } else if (!is.null(dim(x)) && is.atomic(x)) {
    d$shape <- I(dim(x))
    d$dtype <- typeof(x)
    d$repr <- sprintf("%s %s of %s", typename(x), paste(dim(x), collapse = "x"), typeof(x))
  } else if (is.factor(x)) {
    d$length <- length(x)
    d$dtype <- "factor"
    d$repr <- sprintf("factor with %d levels: %s", nlevels(x), short(x))
  } else if (is.atomic(x)) {
    d$length <- length(x)
    d$dtype <- typeof(x)
    d$repr <- short(x)
  } else if (is.function(x)) {
    d$repr <- sprintf("<function %s>", name)
  } else if (is.list(x) && is.null(attr(x, "class"))) {
    d$length <- length(x)
    nm <- names(x)
    nm <- nm[!is.na(nm) & nzchar(nm)]
    d$repr <- if (length(nm) == 0) sprintf("list of %d", length(x)) else sprintf("list of %d: %s", length(x), short(nm))
  } else {
    d$repr <- sprintf("<%s object>", typename(x))
  }
  d
}

names_ <- sort(ls(ns))
out <- lapply(names_, function(name) {
  x <- get(name, envir = ns)
  tryCatch(describe(name, x), error = function(e) list(name = name, type = typename(x), repr = "<could not describe>"))
})
reply(list(variables = I(utils::head(out, args$max)), total = length(out)))
