// Package models holds Promela models of pvlock's PV slow paths and the
// test that model-checks them with spin.
//
// ticket.pml is the PV ticket lock of package ticket with the halt/kick
// layer of package kick; qspin.pml is the PV queued spinlock of package
// qspin, step by step as the Go code does it; gate.pml is the concurrency
// restriction of package lockcore (Gate) in front of an abstract lock,
// which the lock models include in reduced form. TestModelSteps checks that
// the steps each model marks match the "// step:" markers in the Go code. Each model
// has mutants, selected with -DMUT_xxx, that reintroduce a known bug; spin
// must verify the models and reject every mutant. TestSpinModels runs all
// checks (it needs the spin and gcc commands); README.md describes the
// models and how to run spin by hand:
//
//	spin -DNCPU=3 -a ticket.pml
//	gcc -O1 -o pan pan.c
//	./pan -a -f -N nohang
//
// The package has no Go API.
package models
