package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/keyset"
	"github.com/visorhq/visor/services/responsibilities"
)

// Questions is the admin API of the questions AI employees ask operators
// from their responsibilities' runs: operators read them as quoted text
// cut to 200 characters, with a warning when the injection scan matched,
// and answer them. An answer wakes the responsibility's next run as data
// and grants nothing. Add it with API.Add.
type Questions struct{ svc *responsibilities.Service }

// NewQuestions returns the questions resource.
func NewQuestions(svc *responsibilities.Service) Questions { return Questions{svc: svc} }

// QuestionList is a page of open questions, oldest first.
type QuestionList struct {
	Questions  []responsibilities.OpenQuestion `json:"questions"`
	NextCursor string                          `json:"next_cursor,omitempty"`
}

// QuestionAnswer is the body of POST
// /tenants/{tenant}/questions/{question}/answer: one of the question's
// options (1-based), a text of at most 4,000 characters, or both.
type QuestionAnswer struct {
	Option int    `json:"option,omitempty"`
	Text   string `json:"text,omitempty"`
}

// AnsweredQuestion is what answering returns: the question as it now
// stands and the run the answer opened (absent when no run could open
// now; the answer then waits for the next run that does).
type AnsweredQuestion struct {
	Question responsibilities.OpenQuestion `json:"question"`
	State    responsibilities.WakeupState  `json:"state"`
	Run      *responsibilities.Run         `json:"run,omitempty"`
}

// Operations lists the question routes.
func (q Questions) Operations() []Operation {
	return []Operation{
		{Method: http.MethodGet, Path: "/tenants/:tenant/questions", ID: "listQuestions", Tag: "responsibilities", Needs: identity.ReadTenant,
			Summary:  "List the open questions AI employees asked from their responsibilities, oldest first, quoted and cut to 200 characters, with injection-scan flags",
			Query:    Paged(QueryParam{Name: "responsibility", Type: "string", Description: "Only this responsibility's (its id)."}),
			Response: QuestionList{}, Handler: q.list},
		{Method: http.MethodPost, Path: "/tenants/:tenant/questions/:question/answer", ID: "answerQuestion", Errors: []int{http.StatusConflict},
			Tag: "responsibilities", Needs: identity.ManageAgents,
			Summary: "Answer an open question; the answer wakes the responsibility's next run as data and grants nothing; 409 when it expired, was withdrawn or answered",
			Request: QuestionAnswer{}, Response: AnsweredQuestion{}, Handler: q.answer},
	}
}

func (q Questions) list(c echo.Context) error {
	page, err := ReadPage(c)
	if err != nil {
		return err
	}
	resp, err := queryID(c, "responsibility")
	if err != nil {
		return err
	}
	after, err := page.After()
	if err != nil {
		return err
	}
	qs, err := q.svc.Questions(c.Request().Context(), tenant(c).ID, resp, after, page.Limit+1)
	if err != nil {
		return err
	}
	out := QuestionList{}
	out.Questions, out.NextCursor = cut(qs, page.Limit, func(q responsibilities.OpenQuestion) keyset.Position {
		return keyset.Position{At: q.AskedAt, ID: q.ID}
	})
	return c.JSON(http.StatusOK, out)
}

func (q Questions) answer(c echo.Context) error {
	id, err := pathID(c, "question")
	if err != nil {
		return err
	}
	var in QuestionAnswer
	if err := decode(c, &in); err != nil {
		return err
	}
	w, run, err := q.svc.AnswerQuestion(c.Request().Context(), tenant(c).ID, id, principal(c).ID(),
		responsibilities.Answer{Option: in.Option, Text: in.Text})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, AnsweredQuestion{Question: responsibilities.ShowQuestion(w), State: w.State, Run: run})
}
