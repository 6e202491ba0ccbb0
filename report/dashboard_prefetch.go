package report

import (
	"html/template"
	"runtime"
	"sync"
	"sync/atomic"
)

// prefetchWindow is how many cards' details the dashboard prepares at most ahead of
// the card the template renders: what bounds the memory the prefetch adds.
const prefetchWindow = 32

// dashboardWorkers is how many goroutines prepare the cards (their results read whole,
// their transcripts, their HTML) beside the one that renders the page: as many as the
// processors Go may use, since the page's own goroutine mostly copies the cards they
// rendered.
func dashboardWorkers() int { return runtime.GOMAXPROCS(0) }

// cardPrep is a card's HTML (Card, its transcripts read), prepared once — by a
// prefetch worker or by the template itself, whichever comes first — and handed to the
// template once.
type cardPrep struct {
	once     sync.Once
	html     template.HTML
	err      error
	slots    chan struct{} // the window; a slot is held from preparation to rendering
	held     atomic.Bool   // a worker holds a slot for this card
	consumed atomic.Bool   // the template took the card
}

// prefetchCards prepares the details of cards, in order (the order the template
// renders them), on workers goroutines, at most prefetchWindow cards ahead of the
// template; workers 0 prepares nothing ahead (each card is read when rendered). The
// page is the same either way. stop ends the prefetch and waits for its goroutines.
func prefetchCards(cards []*cardView, workers int) (stop func()) {
	if workers <= 0 || len(cards) == 0 {
		return func() {}
	}
	slots, done := make(chan struct{}, prefetchWindow), make(chan struct{})
	for _, cv := range cards {
		cv.prep = &cardPrep{slots: slots}
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, len(cards)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(cards); i = int(next.Add(1) - 1) {
				select {
				case <-done:
					return
				default:
				}
				select {
				case slots <- struct{}{}:
				case <-done:
					return
				}
				cv := cards[i]
				p := cv.prep
				p.held.Store(true)
				if p.consumed.Load() {
					// rendered already: give the slot back unless the template did
					if p.held.CompareAndSwap(true, false) {
						<-slots
					}
					continue
				}
				p.once.Do(func() { p.html, p.err = cv.prepare() })
			}
		})
	}
	return func() {
		close(done)
		wg.Wait()
	}
}

// take is the template's side of a prepared card: its HTML (prepared now if no worker
// has yet), the window slot given back, and the prepared card forgotten, so that the
// page never holds more than the window's cards. ok is false when the card was taken
// before (it is then prepared again by the caller).
func (p *cardPrep) take(cv *cardView) (html template.HTML, ok bool, err error) {
	if !p.consumed.CompareAndSwap(false, true) {
		return "", false, nil
	}
	p.once.Do(func() { p.html, p.err = cv.prepare() })
	if p.held.CompareAndSwap(true, false) {
		<-p.slots
	}
	html, err = p.html, p.err
	p.html, p.err = "", nil
	return html, true, err
}

// prepare is Card with the transcripts read (Shown) into the card before it is
// rendered.
func (cv *cardView) prepare() (template.HTML, error) {
	full, err := cv.details()
	if err != nil {
		return "", err
	}
	if full.transcriptDir != "" && full.R != nil {
		full.Transcripts, full.transcriptDir = full.Shown(), ""
	}
	return renderCard(full)
}
