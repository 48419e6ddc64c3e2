// Package models holds Promela models of pvlock's PV slow paths and the
// test that model-checks them with spin.
//
// ticket.pml is the PV ticket lock of package ticket with the halt/kick
// layer of package kick; qspin.pml is the Linux paravirtualized queued
// spinlock (qspinlock_paravirt.h) that package qspin follows. Each model
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
