// Package partitions keeps the daily partitions of the events table: it
// remembers which days exist, makes a missing day in a transaction of its
// own (serialised across replicas by the advisory lock LockID), refuses a
// day whose name another role's relation took (ErrTaken), and logs and
// counts each day it cannot make.
//
// Package store owns a Manager and calls it before each batch, at Prepare
// and at each upkeep; retention tells it the days it dropped. It must never
// drop a partition nor read or write rows: it only makes the tables the
// rows go into.
package partitions
