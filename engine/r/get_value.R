# get_value: the value of args$expression, evaluated in the user's environment, as JSON
# with its class. Runs after prelude.R. An error in evaluating the expression is replied
# as eval_error; one in converting the value is raised. At most args$max_cells elements
# are converted in all. Data frames are converted in args$orient: "split" ({columns,
# index, data}) or "records" ({columns, index, records}); their index is the row names,
# as integers when R made them. Factors give their labels; NA, NaN and Inf are null;
# a vector of length 1 is a scalar; a vector or list with names is an object. With
# args$head, only the first n rows (of a data frame or matrix) or items (of a vector or
# list) are converted, and the reply says how many there were.

budget <- args$max_cells
orient <- if (is.null(args$orient)) "split" else args$orient

spend <- function(n, what) {
  budget <<- budget - n
  if (budget < 0) {
    stop(sprintf("the value has more than %.0f elements in all (at %s), more than get_value converts; select a part of it (head(df, 100), x[1:100])", args$max_cells, what), call. = FALSE)
  }
}

unique_names <- function(nm, what) {
  nm <- nm[nm != ""]
  dup <- unique(nm[duplicated(nm)])
  if (length(dup) > 0) {
    stop(sprintf("the %s has two elements that are both named %s; rename one", what, encodeString(dup[1], quote = "\"")), call. = FALSE)
  }
}

# spend_deep spends a list's elements, and theirs, stopping as soon as the budget is out.
spend_deep <- function(v, what) {
  spend(length(v), what)
  if (is.list(v)) for (e in v) spend_deep(e, what)
}

# plain turns times into what JSON holds: POSIXct as ISO 8601 in UTC (with the fraction of
# a second when there is one), difftime as seconds.
plain <- function(x) {
  if (inherits(x, "POSIXlt")) x <- as.POSIXct(x)
  if (inherits(x, "POSIXct")) {
    secs <- unclass(x)
    fmt <- if (any(secs %% 1 != 0, na.rm = TRUE)) "%Y-%m-%dT%H:%M:%OS6Z" else "%Y-%m-%dT%H:%M:%SZ"
    return(stats::setNames(format(x, fmt, tz = "UTC"), names(x)))
  }
  if (inherits(x, "difftime")) return(stats::setNames(as.numeric(x, units = "secs"), names(x)))
  x
}

row_index <- function(x) {
  rn <- attr(x, "row.names")
  if (is.integer(rn)) I(rn) else I(as.character(rn))
}

conv <- function(x, depth = 0) {
  if (depth > 100) stop("the value is nested more than 100 levels deep", call. = FALSE)
  if (is.null(x)) return(NULL)
  x <- plain(x)
  if (is.data.frame(x)) {
    spend(as.numeric(nrow(x)) * ncol(x) + nrow(x), "a data.frame")
    for (col in x) if (is.list(col)) for (e in col) spend_deep(e, "a data.frame")
    x[] <- lapply(x, plain)
    cols <- names(x)
    if (orient == "split") {
      return(list(columns = I(cols), index = row_index(x), data = to_json(unname(x), dataframe = "values")))
    }
    dup <- unique(cols[duplicated(cols)])
    if (length(dup) > 0) {
      stop(sprintf("the data.frame's column names repeat: %s; rename them, or use orient split", paste(encodeString(dup, quote = "\""), collapse = ", ")), call. = FALSE)
    }
    return(list(columns = I(cols), index = row_index(x), records = to_json(x, dataframe = "rows")))
  }
  if (is.factor(x)) {
    x <- stats::setNames(as.character(x), names(x))
  }
  if (is.atomic(x) && length(dim(x)) == 1) {
    x <- stats::setNames(as.vector(x), names(x)) # a 1-D array, as table(x) makes: a named vector
  }
  if (is.atomic(x)) {
    if (is.complex(x)) stop("a value of type complex cannot be converted to JSON; take Re() and Im()", call. = FALSE)
    if (is.raw(x)) stop("a raw vector cannot be converted to JSON; use rawToChar() for text", call. = FALSE)
    d <- dim(x)
    if (!is.null(d)) {
      if (length(d) != 2) stop(sprintf("an array of %d dimensions cannot be converted to JSON; select a matrix of it (x[, , 1])", length(d)), call. = FALSE)
      spend(length(x), "a matrix")
      m <- array(as.vector(x), dim = d)
      dn <- dimnames(x)
      if (is.null(dn)) return(m)
      # A matrix with dimnames (cor(df), table(a, b)) keeps them, in the data.frame shape.
      cols <- if (is.null(dn[[2]])) seq_len(d[2]) else dn[[2]]
      rows <- if (is.null(dn[[1]])) seq_len(d[1]) else dn[[1]]
      return(list(columns = I(cols), index = I(rows), data = m))
    }
    spend(length(x), "a vector")
    if (!is.null(names(x))) {
      unique_names(names(x), "vector")
      return(as.list(x))
    }
    return(x)
  }
  if (is.list(x)) {
    spend(length(x), "a list")
    nm <- names(x)
    if (!is.null(nm)) unique_names(nm, "list")
    out <- lapply(unclass(x), conv, depth = depth + 1)
    if (length(out) == 0) return(if (is.null(nm)) I(list()) else structure(list(), names = character(0)))
    names(out) <- nm
    return(out)
  }
  stop(sprintf("a value of class %s cannot be converted to JSON (get_value handles vectors, factors, dates, lists, matrices and data frames)", typename(x)), call. = FALSE)
}

preview <- function(x, n) {
  if (is.data.frame(x)) return(list(x[seq_len(min(n, nrow(x))), , drop = FALSE], nrow(x), "rows"))
  if (is.matrix(x)) return(list(x[seq_len(min(n, nrow(x))), , drop = FALSE], nrow(x), "rows"))
  if (is.atomic(x) || is.factor(x)) return(list(x[seq_len(min(n, length(x)))], length(x), "values"))
  if (is.list(x) && is.null(dim(x))) return(list(x[seq_len(min(n, length(x)))], length(x), "items"))
  list(x, NULL, NULL)
}

shape <- function(x) {
  if (is.null(x)) return("")
  if (is.data.frame(x)) return(sprintf("%d rows x %d columns", nrow(x), ncol(x)))
  if (!is.null(dim(x))) return(paste("shape", paste(dim(x), collapse = "x")))
  if (is.atomic(x) && length(x) != 1) return(sprintf("%d values", length(x)))
  if (is.list(x) && !inherits(x, "POSIXlt")) return(sprintf("%d items", length(x)))
  ""
}

near_names <- function(msg) {
  m <- regmatches(msg, regexec("^object '(.+)' not found$|^could not find function \"(.+)\"$", msg))[[1]]
  if (length(m) == 0) return("")
  name <- if (nzchar(m[2])) m[2] else m[3]
  cands <- ls(ns)
  if (length(cands) == 0) return("")
  d <- utils::adist(name, cands)[1, ]
  ok <- d <= max(1, nchar(name) %/% 3)
  if (!any(ok)) return("")
  pick <- utils::head(cands[ok][order(d[ok])], 3)
  paste0("; did you mean ", paste(encodeString(pick, quote = "'"), collapse = " or "), "?")
}

# One expression, not an assignment: get_value defines and removes nothing.
one_expression <- function(text) {
  ex <- parse(text = text, keep.source = FALSE)
  if (length(ex) != 1) {
    stop(sprintf("get_value takes one expression, and this has %d; run statements with run_code", length(ex)), call. = FALSE)
  }
  e <- ex[[1]]
  if (is.call(e) && is.name(e[[1]]) && as.character(e[[1]]) %in% c("<-", "<<-", "=")) {
    stop("get_value takes one expression, not an assignment; assign with run_code", call. = FALSE)
  }
  e
}

value <- tryCatch(list(ok = eval(one_expression(args$expression), ns)),
                  error = function(e) e)
if (inherits(value, "error")) {
  ename <- class(value)[1]
  if (ename == "simpleError") ename <- "Error"
  msg <- conditionMessage(value)
  reply(list(eval_error = list(ename = ename, evalue = paste0(msg, near_names(msg)))))
} else {
  value <- value$ok
  out <- list(type = typename(value), shape = shape(value))
  if (!is.null(args$head)) {
    p <- preview(value, args$head)
    if (!is.null(p[[2]]) && p[[2]] > args$head) {
      value <- p[[1]]
      out$total <- p[[2]]
      out$shown <- min(args$head, p[[2]])
      out$unit <- p[[3]]
    }
  }
  v <- conv(value)
  out["value"] <- list(v)
  reply(out)
}
