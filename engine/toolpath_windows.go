package engine

// openNonblock: Windows has no fifo that an open waits on.
const openNonblock = 0
