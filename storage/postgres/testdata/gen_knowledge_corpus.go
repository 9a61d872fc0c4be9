//go:build ignore

// gen_knowledge_corpus writes knowledge_corpus.json: the memories of one
// AI employee at a software company, in English and Japanese, and search
// queries in both languages with the memories each should find. Run it
// from this directory with `go run gen_knowledge_corpus.go`; it is
// deterministic.
package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
)

type memory struct {
	ID      string `json:"id"`
	Lang    string `json:"lang"`
	Layer   string `json:"layer"`
	Content string `json:"content"`
}

type query struct {
	Lang     string   `json:"lang"`
	Text     string   `json:"text"`
	Relevant []string `json:"relevant"`
}

type corpus struct {
	Memories []memory `json:"memories"`
	Queries  []query  `json:"queries"`
}

// slots are the words one template is filled with.
type slots map[string]string

// tmpl is one kind of memory with two ways to ask for it.
type tmpl struct {
	layer   string
	content string
	queries [2]string
}

func fill(s string, v slots) string {
	out := []rune{}
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		if rs[i] == '{' {
			j := i + 1
			for j < len(rs) && rs[j] != '}' {
				j++
			}
			out = append(out, []rune(v[string(rs[i+1:j])])...)
			i = j
			continue
		}
		out = append(out, rs[i])
	}
	return string(out)
}

var en = struct {
	customers, people, products, months, cities, warehouses, teams, weekdays, tools []string
	customer, team                                                                  []tmpl
}{
	customers:  []string{"Northwind", "Contoso", "Fabrikam", "Initech", "Umbrella Foods", "Tailspin Toys", "Wingtip", "Litware", "Proseware", "Adatum", "Woodgrove Bank", "Blue Yonder Air"},
	people:     []string{"Maria Lopez", "James Carter", "Priya Shah", "Tom Becker", "Aisha Bello", "Lukas Novak", "Emma Wilson", "Chen Wei", "Sofia Rossi", "David Kim", "Olga Ivanova", "Noah Brown"},
	products:   []string{"analytics suite", "payroll module", "inventory app", "support desk", "CRM seats", "data warehouse"},
	months:     []string{"January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"},
	cities:     []string{"Chicago", "Berlin", "Toronto", "Austin", "Dublin", "Singapore", "Madrid", "Seattle"},
	warehouses: []string{"Reno", "Rotterdam", "Memphis", "Leipzig", "Columbus"},
	teams:      []string{"billing", "search", "mobile", "data platform", "security", "payments", "identity", "notifications", "reporting", "infrastructure"},
	weekdays:   []string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday"},
	tools:      []string{"Grafana", "Datadog", "Kibana", "Honeycomb"},
	customer: []tmpl{
		{"semantic", "{C} wants to move the renewal of their {P} to {M}; {X} owns the contract on their side.",
			[2]string{"When does {C} renew?", "{C} renewal date for the {P}"}},
		{"profile", "{Y} at {C} prefers a phone call before 10am and dislikes long emails.",
			[2]string{"How does {Y} like to be contacted?", "best way to reach {Y} from {C}"}},
		{"episodic", "{C}'s invoices stopped syncing last week because their API token expired; we rotated the token and re-ran the sync.",
			[2]string{"Why did {C} invoices stop syncing?", "{C} invoice sync failure cause"}},
		{"decision", "Decision: {C} gets a {N} percent discount on the annual plan because they committed to a three-year term.",
			[2]string{"What discount did we give {C}?", "{C} annual plan discount"}},
		{"procedural", "To onboard new {C} users, export the roster from their HR system as CSV and upload it in the admin console under Users.",
			[2]string{"How do we onboard users for {C}?", "steps to add {C} users"}},
		{"semantic", "{C}'s hardware order ships from the {W} warehouse; tracking updates go to their procurement mailbox.",
			[2]string{"Which warehouse ships the {C} order?", "{C} shipping warehouse"}},
		{"episodic", "The quarterly business review with {C} is booked for {M} 14 in {T}, with {X} and their finance lead.",
			[2]string{"When is the {C} QBR?", "{C} quarterly business review meeting"}},
		{"episodic", "{C} complained that the mobile app logs their staff out every morning; support reproduced it on Android.",
			[2]string{"What did {C} complain about?", "{C} logout complaint mobile"}},
	},
	team: []tmpl{
		{"semantic", "The {G} team rotates on-call every {D}; escalate unanswered pages to {X}.",
			[2]string{"Who handles escalations for {G} on-call?", "{G} on-call rotation"}},
		{"procedural", "{G} deploys are frozen during the last week of each quarter unless the VP of engineering signs off.",
			[2]string{"When are {G} deploys frozen?", "{G} deploy freeze policy"}},
		{"semantic", "The {G} error budget dashboard is in {O}, in the folder named {G}-slo.",
			[2]string{"Where is the {G} error budget dashboard?", "{G} SLO dashboard location"}},
	},
}

var ja = struct {
	customers, people, products, months, cities, warehouses, teams, weekdays, tools []string
	customer, team                                                                  []tmpl
}{
	customers:  []string{"田中商事", "山本工業", "佐藤物流", "鈴木製菓", "高橋電機", "伊藤建設", "渡辺薬品", "中村食品", "小林印刷", "加藤運輸", "吉田不動産", "松本システム"},
	people:     []string{"佐々木さん", "井上さん", "木村さん", "林さん", "清水さん", "山崎さん", "森さん", "池田さん", "橋本さん", "阿部さん", "石川さん", "前田さん"},
	products:   []string{"分析スイート", "給与計算モジュール", "在庫管理アプリ", "サポートデスク", "CRMライセンス", "データ基盤"},
	months:     []string{"一月", "二月", "三月", "四月", "五月", "六月", "七月", "八月", "九月", "十月", "十一月", "十二月"},
	cities:     []string{"大阪", "名古屋", "福岡", "札幌", "仙台", "横浜", "神戸", "京都"},
	warehouses: []string{"厚木", "春日井", "鳥栖", "苫小牧", "岩槻"},
	teams:      []string{"請求", "検索", "モバイル", "データ基盤", "セキュリティ", "決済", "認証", "通知", "レポート", "インフラ"},
	weekdays:   []string{"月曜日", "火曜日", "水曜日", "木曜日", "金曜日"},
	tools:      []string{"Grafana", "Datadog", "Kibana", "Honeycomb"},
	customer: []tmpl{
		{"semantic", "{C}は{P}の契約更新を{M}に延期したいと連絡してきた。先方の契約担当は{X}。",
			[2]string{"{C}の契約更新はいつ？", "{C}の更新の延期"}},
		{"profile", "{C}の{Y}は午前十時前の電話連絡を好み、長いメールは苦手。",
			[2]string{"{C}の{Y}への連絡方法", "{Y}には電話とメールどちらがいい？"}},
		{"episodic", "先週、{C}の請求書連携が止まった。原因はAPIトークンの期限切れで、トークンを再発行して同期をやり直した。",
			[2]string{"{C}の請求書連携が止まった原因", "{C}の請求書同期エラー"}},
		{"decision", "決定：{C}には三年契約を条件に年間プランを{N}パーセント値引きする。",
			[2]string{"{C}への値引きはいくら？", "{C}の年間プラン値引き"}},
		{"procedural", "{C}の新規ユーザー登録は、人事システムから名簿をCSVで書き出し、管理画面のユーザー欄から取り込む。",
			[2]string{"{C}のユーザー登録手順", "{C}の新規ユーザーを追加する方法"}},
		{"semantic", "{C}向けの機器は{W}倉庫から出荷し、配送状況は先方の購買窓口にメールで届く。",
			[2]string{"{C}の出荷倉庫はどこ？", "{C}向け機器の出荷元"}},
		{"episodic", "{C}との四半期レビューは{M}十四日に{T}で行う。{X}と先方の経理責任者が出席する。",
			[2]string{"{C}の四半期レビューの日程", "{C}との四半期レビューはいつ"}},
		{"episodic", "{C}から、モバイルアプリが毎朝ログアウトされるという苦情があった。サポートがAndroidで再現した。",
			[2]string{"{C}の苦情の内容", "{C}のモバイルアプリのログアウト問題"}},
	},
	team: []tmpl{
		{"semantic", "{G}チームのオンコール当番は毎週{D}に交代する。応答のない呼び出しは{X}にエスカレーションする。",
			[2]string{"{G}チームのエスカレーション先", "{G}チームのオンコール当番"}},
		{"procedural", "{G}チームのデプロイは各四半期の最終週は凍結。例外には開発担当役員の承認が要る。",
			[2]string{"{G}チームのデプロイ凍結期間", "{G}のデプロイはいつ止まる？"}},
		{"semantic", "{G}チームのエラーバジェットのダッシュボードは{O}の「{G}-slo」フォルダにある。",
			[2]string{"{G}チームのエラーバジェットのダッシュボードはどこ", "{G}のSLOダッシュボードの場所"}},
	},
}

// general are memories no query asks for: background any search must
// rank below the right answer.
var general = []memory{
	{Lang: "en", Layer: "semantic", Content: "Expense reports are due on the 25th of each month and need a receipt for anything over 50 dollars."},
	{Lang: "en", Layer: "procedural", Content: "To request a new laptop, open a ticket in the IT portal and pick the standard engineering bundle."},
	{Lang: "en", Layer: "semantic", Content: "The office in Dublin closes at 7pm; badge access after hours needs a manager's approval."},
	{Lang: "en", Layer: "episodic", Content: "The all-hands on Friday covered the new travel policy and the hiring plan for next quarter."},
	{Lang: "en", Layer: "semantic", Content: "Customer data must stay in the region the customer signed up in; cross-region copies need legal review."},
	{Lang: "en", Layer: "procedural", Content: "When a customer asks for a refund, check the invoice status first, then file the refund in the billing console."},
	{Lang: "en", Layer: "semantic", Content: "Support answers tickets within four business hours for enterprise customers and one business day otherwise."},
	{Lang: "en", Layer: "episodic", Content: "Yesterday the status page showed degraded performance for twenty minutes after a database failover."},
	{Lang: "ja", Layer: "semantic", Content: "経費精算の締め切りは毎月二十五日。五千円を超えるものには領収書が必要。"},
	{Lang: "ja", Layer: "procedural", Content: "新しいノートPCが必要なときは、社内ポータルで申請し、標準の開発者セットを選ぶ。"},
	{Lang: "ja", Layer: "semantic", Content: "大阪オフィスは午後七時に閉まる。時間外の入館には上長の承認が必要。"},
	{Lang: "ja", Layer: "episodic", Content: "金曜日の全社会議では新しい出張規程と来期の採用計画が説明された。"},
	{Lang: "ja", Layer: "semantic", Content: "顧客データは契約した地域に保管する。地域をまたぐ複製には法務の確認が要る。"},
	{Lang: "ja", Layer: "procedural", Content: "返金の依頼を受けたら、まず請求書の状態を確認し、請求管理画面で返金を登録する。"},
	{Lang: "ja", Layer: "semantic", Content: "エンタープライズ顧客の問い合わせには四営業時間以内、それ以外は一営業日以内に回答する。"},
	{Lang: "ja", Layer: "episodic", Content: "昨日、データベースのフェイルオーバー後にステータスページが二十分間性能低下を表示した。"},
}

func main() {
	rng := rand.New(rand.NewPCG(25, 2026))
	var c corpus
	n := 0
	add := func(lang string, t tmpl, v slots) {
		n++
		id := fmt.Sprintf("%s-%03d", lang, n)
		c.Memories = append(c.Memories, memory{ID: id, Lang: lang, Layer: t.layer, Content: fill(t.content, v)})
		c.Queries = append(c.Queries, query{Lang: lang, Text: fill(t.queries[rng.IntN(2)], v), Relevant: []string{id}})
	}
	for li, L := range []struct {
		lang string
		d    *struct {
			customers, people, products, months, cities, warehouses, teams, weekdays, tools []string
			customer, team                                                                  []tmpl
		}
	}{{"en", &en}, {"ja", &ja}} {
		d := L.d
		for i, cust := range d.customers {
			for _, t := range d.customer {
				add(L.lang, t, slots{"C": cust, "P": d.products[rng.IntN(len(d.products))], "M": d.months[rng.IntN(12)],
					"X": d.people[(i+li)%len(d.people)], "Y": d.people[(i+5)%len(d.people)], "N": fmt.Sprint(5 + rng.IntN(4)*5),
					"W": d.warehouses[rng.IntN(len(d.warehouses))], "T": d.cities[rng.IntN(len(d.cities))]})
			}
		}
		for i, team := range d.teams {
			for _, t := range d.team {
				add(L.lang, t, slots{"G": team, "D": d.weekdays[rng.IntN(len(d.weekdays))], "X": d.people[(i+3)%len(d.people)],
					"O": d.tools[rng.IntN(len(d.tools))]})
			}
		}
	}
	for i, m := range general {
		m.ID = fmt.Sprintf("%s-g%02d", m.Lang, i)
		c.Memories = append(c.Memories, m)
	}
	rng.Shuffle(len(c.Memories), func(i, j int) { c.Memories[i], c.Memories[j] = c.Memories[j], c.Memories[i] })
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		panic(err)
	}
	if err := os.WriteFile("knowledge_corpus.json", append(b, '\n'), 0o644); err != nil {
		panic(err)
	}
	fmt.Printf("%d memories, %d queries\n", len(c.Memories), len(c.Queries))
}
