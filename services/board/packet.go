package board

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/visorhq/visor/services/fault"
)

// MaxPacketBytes caps a TaskPacket, as sent.
const MaxPacketBytes = 1024

// TaskPacket is what one employee hands another with a task: enough to
// start without the giver's context. It travels to the receiver as data.
type TaskPacket struct {
	Goal          string   `json:"goal"`
	Context       string   `json:"context,omitempty"`
	DoneWhen      []string `json:"done_when,omitempty"`
	Constraints   []string `json:"constraints,omitempty"`
	Artifacts     []string `json:"artifacts,omitempty"`
	NextSteps     []string `json:"next_steps,omitempty"`
	OpenQuestions []string `json:"open_questions,omitempty"`
}

// PacketShape states the whole TaskPacket for team_handoff's packet
// parameter: a model that cannot see the shape cannot write a valid one,
// and a wrong one is rejected whole.
const PacketShape = `TaskPacket as JSON text, at most 1,024 bytes; rejected whole, never truncated, when malformed or larger. ` +
	`An object with: goal (string, required: what the receiver must achieve); context (string: what is known so far); ` +
	`done_when (array of strings: checks that show it is done); constraints (array of strings: limits to respect); ` +
	`artifacts (array of strings: ids, URLs or paths to use); next_steps (array of strings: suggested first steps); ` +
	`open_questions (array of strings). No other fields. The receiver gets it as data, not instructions.`

// ParsePacket parses and checks a TaskPacket. Anything but exactly the
// documented shape within MaxPacketBytes is refused whole: fault.TooLarge
// over the size, fault.Invalid otherwise, naming what is wrong.
func ParsePacket(raw string) (TaskPacket, error) {
	var p TaskPacket
	if len(raw) > MaxPacketBytes {
		return p, fault.New(fault.TooLarge, "packet is %d bytes; a TaskPacket may be at most %d bytes and is never truncated: shorten it and send it again", len(raw), MaxPacketBytes)
	}
	if !utf8.ValidString(raw) {
		return p, fault.New(fault.Invalid, "packet must be UTF-8 JSON text")
	}
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return TaskPacket{}, fault.New(fault.Invalid, "packet is not a TaskPacket (%s); nothing was handed off", packetProblem(err))
	}
	if dec.More() || !bytes.Equal(bytes.TrimSpace([]byte(raw))[:1], []byte("{")) {
		return TaskPacket{}, fault.New(fault.Invalid, "packet must be exactly one JSON object; nothing was handed off")
	}
	if strings.TrimSpace(p.Goal) == "" {
		return TaskPacket{}, fault.New(fault.Invalid, "packet.goal is required; nothing was handed off")
	}
	return p, nil
}

// packetProblem turns a decoding error into a short, safe explanation.
func packetProblem(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return "field " + te.Field + " has the wrong type"
	}
	msg := err.Error()
	if strings.HasPrefix(msg, "json: unknown field ") {
		return "unknown field " + strings.TrimPrefix(msg, "json: unknown field ")
	}
	return "malformed JSON"
}
