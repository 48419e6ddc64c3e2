// Package examples holds pvlock's example programs (basic, overcommit,
// metrics). Its test builds every Go snippet of the repository's README,
// so that the snippets stay programs that compile.
package examples
