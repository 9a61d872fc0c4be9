package knowledge_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/knowledge"
)

func TestSegments(t *testing.T) {
	for in, want := range map[string][]string{
		"田中商事の契約更新はいつ？":             {"田中商事", "契約更新"},
		"決済のデプロイはいつ止まる？":            {"いつ止まる", "デプロイ", "決済"},
		"決済チームのエラーバジェットのダッシュボードはどこ": {"エラーバジェット", "ダッシュボード", "決済チーム", "チーム", "決済"},
		"山崎さんには電話とメールどちらがいい？":       {"メールどちらがいい", "山崎さんには電話", "メール", "山崎", "電話"},
		"SLOダッシュボードの場所":             {"SLOダッシュボード", "ダッシュボード", "SLO", "場所"},
		"いつ":                        nil,
	} {
		require.Equal(t, want, knowledge.Segments(in), in)
	}
}
