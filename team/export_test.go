package team

import (
	"context"

	"github.com/flowerrun/flower/store"
	"github.com/flowerrun/flower/store/postgres"
)

// TranscriptSpend is what run id's transcripts in the database at url
// show it spent.
func TranscriptSpend(ctx context.Context, url string, id int64) (float64, error) {
	pg, err := postgres.Open(ctx, url)
	if err != nil {
		return 0, err
	}
	defer pg.Close()
	return transcriptSpend(ctx, store.OneProject{Base: pg, Project: "run:" + StateName(id)})
}
