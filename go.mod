module github.com/valkey-fsm/valkey-operator

go 1.26.0

require (
	github.com/looplab/fsm v1.0.3 // indirect
	pgregory.net/rapid v1.3.0 // indirect
)
