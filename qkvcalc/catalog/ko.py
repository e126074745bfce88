"""한국어 메시지. qkvcalc가 사용자에게 보여 주는 모든 문장을 키별로 담습니다; en.py와 키가 같습니다.

Korean messages, the same keys as en.py (tests/test_i18n.py checks the keys and placeholders).
Terms follow Korean ML texts: 어텐션 스코어, 내적, 전치, 스케일링, 선형 투영, 가중합, 마스킹,
소프트맥스, 헤드, 토큰, 셀프 어텐션(Self-Attention), 크로스 어텐션, 인과 마스크(causal), KV 캐시.
Query/Key/Value stay in English everywhere (never 쿼리/키/값), as in the source articles; so does
GQA (Grouped-Query Attention). A value the user types (none, causal) is glossed in Korean. A
placeholder is never followed by a particle that depends on its last sound (은/는, 이/가, 을/를,
와/과, 으로/로, 이어야/여야, 이라/라), and no line uses a dual form (은(는), 을(를), 와(과), 이(가),
(으)로: "프리셋 sentence을(를)" reads as a form left unfilled): the sentence is built around the
value (a colon, 의, 에서, a noun after it such as 모델, 옵션, 정밀도, 파일, a counter such as 개
or 번, or a copula such as 이므로/이고/입니다/인가요), and after fixed text the right particle is
written. tests/test_i18n.py checks it.
"""

MESSAGES: dict[str, str] = {
    # ---- stages: title and why the stage exists ------------------------------------------
    "stage.x.title": "입력 X",
    "stage.x.why": "각 행은 어텐션 층에 들어오는 토큰 하나의 벡터입니다. 원래 Transformer의 첫 "
    "층에서는 임베딩에 위치 정보를 더한 것이고, 더 깊은 층에서는 아래 층의 출력이며, 프리-노름 "
    "모델(GPT-2, Llama)에서는 그 벡터가 층의 정규화를 거친 것입니다(GPT-2의 ln_1: 행마다 정규화한 "
    "뒤, 정규화 자신의 가중치로 배율을 곱하고 이동합니다). 첫 층에서는 임베딩 표가 토큰 ID에서 "
    "임베딩을 만듭니다. W_Q, W_K, W_V는 그 표가 아니라 따로 학습되는 별개의 매개변수로서, 이 "
    "행들을 어텐션의 세 역할로 바꿉니다.",
    "stage.source.title": "소스 (Key와 Value를 여기서 만듭니다)",
    "stage.source.why": "크로스 어텐션에서는 Query를 X에서 만들지만, Key와 Value는 다른 "
    "시퀀스에서 만듭니다. 디코더가 읽는 인코더의 출력이 대표적인 예입니다.",
    "stage.split.title": "헤드로 나누기",
    "stage.split.why": "모든 헤드는 입력 전체를 읽습니다. 나뉘는 것은 선형 투영입니다: W_Q, W_K, "
    "W_V의 열(Q, K, V를 직접 주었다면 그 열)을 헤드마다 한 조각씩 잘라 나누므로, 헤드마다 "
    "자기만의 Q, K, V(GQA에서는 그룹이 함께 쓰는 K와 V)를 가지고 어떤 토큰이 중요한지를 따로 "
    "배울 수 있습니다. 헤드들은 나란히 계산되고 마지막에 다시 합쳐집니다.",
    "stage.q.title": "Query 선형 투영",
    "stage.q.why": "Query는 이 토큰이 찾고 있는 특징입니다. 말로 된 질문이 아니라 숫자 "
    "벡터입니다. X에 학습된 가중치 W_Q를 곱하면 각 토큰의 숫자들이 이 역할에 맞게 다시 "
    "조합됩니다. 각 칸은 X의 한 행의 성분들을 가중합한 값입니다. 헤드 안의 모든 토큰에 한 번 "
    "학습된 같은 W_Q를 곱하므로, 헤드는 처음 보는 문장에서도 작동합니다. X 자체를 Q, K, V로 "
    "쓸 수도 있지만 그러면 토큰을 서로 얼마나 닮았는지로만 비교하게 됩니다. 행렬을 따로 두면 "
    "한 토큰이 찾는 것, 내보이는 것, 건네주는 것이 서로 다를 수 있습니다.",
    "stage.k.title": "Key 선형 투영",
    "stage.k.why": "Key는 각 토큰이 Query와 비교될 때 내보이는 특징입니다. W_K는 W_Q와 따로 "
    "학습되므로, 한 토큰이 찾는 특징(Query)과 다른 토큰들이 그 토큰을 찾을 때 보는 특징(Key)이 "
    "서로 다를 수 있습니다. 셀프 어텐션에서는 K를 Q와 같은 X에서, 크로스 어텐션에서는 소스에서 "
    "만듭니다.",
    "stage.v.title": "Value 선형 투영",
    "stage.v.why": "Value는 토큰이 자기에게 주목하는 모든 Query에게, 그 Query의 가중치만큼 "
    "건네주는 내용입니다. 어텐션은 하나를 골라내지 않고 섞습니다. 어텐션 스코어는 각 토큰이 "
    "얼마나 중요한지만 알려 줄 뿐이고, 출력에 실제로 섞이는 것은 V입니다. Q, K, V는 토큰의 "
    "세 종류가 아니라, 같은 토큰의 행을 세 가지로 투영한 것입니다.",
    "stage.v_state.title": "Value 선형 투영",
    "stage.v_state.why": "Value는 토큰이 자기 Key 방향으로 상태에 써 넣는 내용입니다. 그 토큰의 "
    "출력과 뒤의 모든 출력이 이것을 아래 행렬의 가중치 W[t,s]만큼 다시 읽습니다(층은 하나를 "
    "골라내지 않고 섞습니다). q와 k는 어디에 쓰고 어디서 읽을지를 정하고, 출력에 실제로 섞이는 "
    "것은 V입니다. Q, K, V는 토큰의 세 종류가 아니라, 같은 토큰의 행을 세 가지로 투영한 것입니다.",
    "stage.q_given.title": "Query Q (주어진 값)",
    "stage.q_given.why": "Q를 직접 주었으므로 계산할 선형 투영이 없습니다. 각 행은 한 토큰의 "
    "Query, 곧 그 토큰이 찾는 것이며, 입력한 수 그대로입니다.",
    "stage.k_given.title": "Key K (주어진 값)",
    "stage.k_given.why": "K를 직접 주었으므로 계산할 선형 투영이 없습니다. 각 행은 한 토큰의 "
    "Key, 곧 Query와 맞춰 볼 수 있도록 그 토큰이 내놓는 것입니다.",
    "stage.v_given.title": "Value V (주어진 값)",
    "stage.v_given.why": "V를 직접 주었으므로 계산할 선형 투영이 없습니다. 각 행은 한 토큰이 "
    "자기에게 주목하는 Query들에게 건네주는 내용입니다.",
    "stage.kt.title": "K의 전치",
    "stage.kt.why": "Q는 n×d_k, K는 m×d_k입니다. K를 전치하면(m×d_k가 d_k×m이 됩니다) 안쪽 "
    "차원이 맞아서, 행렬곱 한 번으로 모든 Query를 모든 Key와 비교할 수 있습니다.",
    "stage.scores.title": "어텐션 스코어",
    "stage.scores.why": "각 칸은 Query 하나와 Key 하나의 내적, 즉 q·k = |q|·|k|·cos θ입니다. "
    "부호는 cos θ의 부호를 따르고(두 벡터 사이의 각이 직각보다 작으면 양수, 크면 음수), "
    "크기는 벡터가 길수록 커집니다. n×m개의 쌍을 한꺼번에, 사이에 있는 토큰을 거치지 않고 "
    "계산합니다(순환 신경망은 토큰 9에서 토큰 1까지 그 사이의 여덟 단계를 차례로 거쳐야 "
    "닿습니다). 그 대가로 이 표의 계산량과 메모리가 n·m에 비례해 늘어납니다(m = n인 셀프 "
    "어텐션에서는 n²). 토큰 100,000개라면 헤드 하나의 표가 10¹⁰개의 수이고, 이것이 긴 문맥을 "
    "제한합니다.",
    "stage.scores.decode.title": "어텐션 스코어",
    "stage.scores.decode.why": "각 칸은 새 토큰의 Query와 캐시된 Key 하나의 내적, 즉 q·k = "
    "|q|·|k|·cos θ입니다. 한 단계는 지금까지 캐시된 Key(자기 것 포함)마다 내적 하나씩, 이 한 "
    "행만 계산하고 표 전체를 다시 계산하지 않습니다. 그래서 단계마다 일은 캐시의 길이에 "
    "비례합니다. 단계들의 행과 prefill의 P×P 표(P = 0이면 없음)에는 인과 마스크가 허용하는 "
    "스코어 n(n + 1)/2개가 모두 있고, prefill의 마스크가 가리는 대각선 위의 P(P − 1)/2개가 더 "
    "있습니다.",
    "stage.scores.prefill.title": "어텐션 스코어",
    "stage.scores.prefill.why": "각 칸은 Query 하나와 Key 하나의 내적, 즉 q·k = "
    "|q|·|k|·cos θ입니다. 부호는 cos θ의 부호를 따르고(두 벡터 사이의 각이 직각보다 작으면 "
    "양수, 크면 음수), 크기는 벡터가 길수록 커집니다. prefill은 자기 토큰 P개의 쌍을 "
    "한꺼번에, 보통의 실행처럼 P×P 표로 계산합니다. 그 뒤의 토큰은 저마다 자기 decode 단계에서 "
    "한 행씩 더하므로, 이 실행은 n×n 표 전체를 한꺼번에 계산하지 않습니다.",
    "stage.scaled.title": "스케일링",
    "stage.scaled.why": "q와 k의 성분이 서로 독립이고 평균 0, 분산 1이라면, 그런 곱 d_k개의 "
    "합인 내적 q·k는 평균 0, 분산 d_k를 가집니다. 즉 전형적인 크기가 √d_k입니다. √d_k로 "
    "나누면 d_k가 얼마든 분산이 다시 1이 됩니다. 소프트맥스는 한 행 전체에 같은 값을 더해도 "
    "결과가 바뀌지 않습니다. 가중치를 Key 하나에 거의 다 몰아주게 만드는 것은 한 행 안에서 "
    "스코어가 크게 벌어지는 것입니다. 그러면 소프트맥스가 포화되어 도함수 A·(1 − A)가 0에 "
    "가까워지므로, 실제 모델처럼 손실이 A·V를 거쳐 스코어에 닿을 때는 기울기가 거의 돌아가지 "
    "않아 학습이 느려집니다(log A 자체에 대한 손실 −Σ log A는 그 도함수를 상쇄합니다).",
    "stage.masked.title": "마스킹",
    "stage.masked.why": "마스크는 일부 Query–Key 쌍(미래 토큰, 패딩)을 막습니다. 그 스코어를 "
    "−∞로 바꾸면 소프트맥스가 그 쌍에 정확히 0의 가중치를 줍니다.",
    "stage.exp.title": "소프트맥스 (1/2): 지수함수 값",
    "stage.exp.why": "소프트맥스는 각 스코어 s에 지수함수를 적용합니다. 먼저 그 행의 최댓값을 "
    "빼도 결과는 같지만(나눗셈에서 약분됩니다), e^s가 오버플로하는 것을 막아 줍니다.",
    "stage.weights.title": "소프트맥스 (2/2): 어텐션 가중치",
    "stage.weights.why": "각 지수함수 값을 그 행의 합으로 나누면 스코어가 가중치로 바뀝니다. "
    "가중치는 0에서 1 사이이고 행마다 합이 1이며, 이 Query가 각 Value를 얼마만큼 가져갈지를 "
    "나타냅니다. 마스킹된 Key의 가중치는 정확히 0이고, 모든 Key가 마스킹된 행은 전부 0입니다.",
    "stage.weights.sinks.title": "소프트맥스 (2/2): 싱크가 있는 어텐션 가중치",
    "stage.weights.sinks.why": "각 지수함수 값을 싱크의 값까지 더한 행의 합으로 나누면 스코어가 "
    "0에서 1 사이의 가중치로 바뀝니다. 그다음 싱크의 열을 버리므로 행마다 합은 1에서 싱크가 "
    "가져간 몫을 뺀 값입니다. 마스킹된 Key의 가중치는 정확히 0입니다.",
    "stage.tiles_start.title": "첫 블록 전: 온라인 소프트맥스의 출발점",
    "stage.tiles_start.why": "누적 최댓값, 누적 합, 누적 출력은 보통 비어 있는 상태(m₀ = −∞, "
    "ℓ₀ = 0, O₀ = 0)에서 시작합니다. 여기서는 모든 Key보다 먼저 본 열(싱크)이 있으므로 그 열에서 "
    "시작하고, 블록마다 평소처럼 갱신합니다.",
    "note.tiles_start": "m₀ = {m0}, ℓ₀ = {l0}: 싱크 자신의 열 e^(σ − σ) = 1을 첫 Key보다 먼저 "
    "셉니다. 싱크의 Value는 0이므로 출력은 0에서 시작합니다.",
    "stage.output.title": "Value의 가중합",
    "stage.output.why": "각 출력 행은 그 Query의 가중치 행에 V를 곱한 것, 즉 Value 행들의 "
    "가중평균입니다. 가중치가 큰 Key의 Value 쪽으로 가장 많이 끌려갑니다.",
    "stage.concat.title": "헤드 이어 붙이기",
    "stage.concat.why": "헤드들의 출력을 헤드 1의 열부터 차례로 나란히 이어 붙입니다. 토큰마다 "
    "한 행이고, 폭은 H·d_v입니다.",
    "stage.output.final.title": "출력 선형 투영",
    "stage.output.final.why": "W_O 덕분에 출력의 각 성분이 모든 헤드의 결과를 함께 쓸 수 있습니다: "
    "concat·W_O = Σ_h head_h·W_O[헤드 h의 행들]이므로, 헤드가 둘 이상이면 한 헤드가 찾은 것과 다른 "
    "헤드들이 찾은 것이 섞입니다. 출력의 폭도 W_O가 정합니다. 보통 d_model로 돌아가서, 층의 입력에 "
    "결과를 더하는 잔차 연결(residual connection)에 맞춥니다.",
    "stage.output.concat.title": "출력 (이어 붙인 헤드)",
    "stage.output.concat.why": "W_O가 주어지지 않았으므로, 이어 붙인 헤드가 그대로 출력입니다.",
    # ---- notes on stages ---------------------------------------------------------------
    "note.scale_default": "d_k = {d_k}이므로 모든 스코어를 나누는 값은 {root} {eq} {value}입니다.",
    "note.scale_given": "직접 지정한 scale {eq} {scale}: 1/√d_k(d_k = {d_k}) 대신 이 값을 "
    "스코어에 곱합니다.",
    "note.mask_convention": "마스크 규칙: 1 / true = 어텐션 허용 (PyTorch "
    "scaled_dot_product_attention의 규칙). nn.MultiheadAttention의 불리언 마스크는 뜻이 "
    "반대입니다(True = 차단).",
    "note.causal_topleft": "n = {n}, m = {m}(Query와 Key의 개수)인 인과 마스크(causal): "
    "is_causal=True처럼 왼쪽 위에 맞추므로 Query i는 Key 1…i를 봅니다. Query가 m개 토큰 중 "
    "마지막 n개일 때(KV 캐시로 디코딩할 때)는 오른쪽 아래에 맞춥니다: Query i가 Key "
    '1…m − n + i를 봅니다("causal_align": "bottom-right"로 지정합니다).',
    "note.kv_shared": "GQA(Grouped-Query Attention): Query 헤드 {first}–{last}에서 K/V 헤드 "
    "{kv_head} 하나를 함께 씁니다.",
    "note.split": "Query 헤드 H = {heads}(헤드마다 d_k = {d_k}), Key/Value 헤드 "
    "G = {kv_heads}(헤드마다 d_k = {d_k}, d_v = {d_v}). Query 헤드 h는 K/V 헤드 ⌈h·G/H⌉의 "
    "Key와 Value를 씁니다.",
    "note.no_arithmetic": "계산 과정 생략: {reason}.",
    "note.too_big_cells": "칸이 {cells}개로, 풀어 쓰는 한도 {limit}개보다 많음",
    "note.too_long_sums": "칸마다 곱 {inner}개를 더해야 해서, 한도 {limit}개보다 많음",
    "note.hidden": "생략(…): 행 {rows}개, 열 {cols}개.",
    "note.hidden_rows": "생략(⋮): 행 {rows}개.",
    "note.hidden_cols": "생략(…): 열 {cols}개.",
    "note.brief": "표만 보여 줍니다(--detail brief).",
    "note.brief_steps": "생략(--detail brief): {from_symbol} … {to_symbol}, 토큰 {first}~{last} "
    "다음의 상태로 이 헤드의 {total}개 중 {count}개입니다. --detail full은 모두 보여 줍니다"
    "(이 헤드의 것만: --stages {id} --head {head} --detail full).",
    "note.brief_grad_steps": "생략(--detail brief): {from_symbol} … {to_symbol}, 토큰 {first} → "
    "{last}(역순) 각각의 뒤 상태에 대한 기울기로, 이 헤드의 {total}개 중 {count}개입니다. --detail "
    "full은 모두 보여 줍니다(이 헤드의 것만: --stages {id} --head {head} --detail full).",
    "note.rounded": "≈: 식 안의 수는 소수 {precision}자리로 반올림해 보여 주고, 결과는 반올림하기 "
    "전의 수로 계산합니다. 그래서 손으로 다시 계산하면 마지막 자리가 다를 수 있습니다.",
    # ---- reading the attention out (qkvcalc.readout) ------------------------------------
    "note.reading_title": "읽어 보기: Query마다 가중치를 가장 많이 받은 Key",
    "note.reading": "{query} → {keys}",
    "note.reading_with_masked": "{query} → {keys}; 마스킹됨: {masked}",
    "note.reading_all_masked": "{query} → 모든 Key가 마스킹되어 가중치가 전혀 없음",
    "ui.reading_key": "{token} {percent}%",
    "ui.reading_key_small": "{token} 1% 미만",
    "ui.reading_rest": "나머지 {percent}%",
    "ui.reading_rest_small": "나머지 1% 미만",
    "note.reading_equal": "{query} → Key {count}개에 똑같이, 각각 1/{count}",
    "note.reading_equal_with_masked": "{query} → 마스킹되지 않은 Key {count}개에 똑같이, 각각 "
    "1/{count}; 마스킹됨: {masked}",
    "ui.reading_equal": "Key {count}개에 똑같이, 각각 1/{count}",
    "ui.reading_none": "모든 Key가 마스킹됨",
    "note.reading_rounding": "백분율은 Query마다 합이 100이 되도록 반올림한 정수입니다. "
    "'1% 미만'은 0보다 크지만 반올림하면 0이 되는 가중치입니다.",
    "note.reading_rounding_ties": "같은 가중치에는 언제나 같은 백분율을 주므로, 반올림하고 남은 "
    "몇 퍼센트포인트를 같은 가중치들이 하나씩 모두 받을 수 없는 Query는 합이 100보다 조금 "
    "작습니다.",
    "note.geometry": "스코어 하나를 길이와 각도로 보면: {query}·{key} = |q|·|k|·cos θ = "
    "{q_norm} × {k_norm} × {cos} = {value}.",
    "note.geometry_zero": "{query}·{key} = 0: Query나 Key가 영벡터라 방향이 없으므로, 각도 θ가 "
    "정의되지 않습니다.",
    "note.geometry_lesson": "{query}의 Query와 방향이 가장 가까운 것은 {aligned}의 Key"
    "(cos θ = {cos_aligned})인데, 스코어가 가장 큰 것은 {strongest}의 Key"
    "(cos θ = {cos_strongest})입니다. 그 Key가 더 길기 때문입니다(|k| = {k_strongest}, "
    "비교: {k_aligned}). 내적은 방향뿐 아니라 길이도 반영합니다.",
    "note.why_scale_shown": "스케일링의 효과({query}): 1/√d_k 없이 → {unscaled}; √d_k로 "
    "나누면 → {scaled}.",
    "note.why_scale_shown_given": "스케일링의 효과({query}): 스케일 {scale} 없이 → {unscaled}; "
    "스케일을 곱하면 → {scaled}.",
    "note.why_scale_variance": "d_k가 아니라 √d_k로 나누는 이유: 성분의 평균이 0, 분산이 1이면 "
    "q·k의 분산은 d_k = {d_k}이므로 스코어가 흔히 ±{root} 정도까지 커집니다. √d_k로 나누면 "
    "분산이 다시 1이 됩니다.",
    "note.scale_temperature": "스코어에 scale c를 곱하는 것은 온도(temperature) T = 1/c인 "
    "소프트맥스와 같습니다. c가 작을수록(T가 클수록) 가중치가 고르게 퍼지고, c가 클수록 가장 "
    "큰 스코어 쪽으로 쏠립니다. 기본값 c = 1/√d_k는 T = √d_k {eq} {root}입니다.",
    "note.scale_zero": "scale 0은 Q와 K가 무엇이든 스케일링된 스코어를 모두 0으로 만듭니다. "
    "가중치는 더 이상 Q와 K에 따라 달라지지 않습니다.",
    "note.scale_negative": "음수 scale은 스코어의 순서를 뒤집습니다. 두 Key 중 q·k가 작은 쪽이 "
    "더 큰 스케일링된 스코어를, 다른 조건이 같다면 더 큰 가중치를 받습니다. 이는 어텐션이 "
    "하려는 일과 반대입니다.",
    "note.shuffle": "어텐션 자체는 순서를 보지 못합니다. 위치 정보도 인과 마스크도 없으면, 토큰의 "
    "순서를 섞어도 출력 행들이 똑같이 섞일 뿐 각 행의 값은 그대로입니다. 순서는 위치 정보(X에 "
    "더하거나 Q와 K에 회전으로 넣는 방식)나 인과 마스크 같은 마스크를 통해서만 어텐션에 "
    "전달됩니다.",
    "note.shuffle_try": '직접 확인하려면 --shuffle "{order}" 옵션을 붙이세요 (토큰 번호를 새 '
    "순서로 씁니다).",
    "note.shuffle_demo": "토큰을 {order} 순서로 섞었습니다: 각 토큰의 출력 행은 전과 같고, "
    "토큰과 함께 새 자리로 옮겨졌을 뿐입니다(가장 큰 차이 {diff}).",
    "note.shuffle_changed": "토큰을 {order} 순서로 섞었습니다: 출력 행이 원래 순서의 행을 "
    "옮겨 놓은 것과 다릅니다(가장 큰 차이 {diff}). 이 어텐션이 순서를 보는 "
    "것은 다음을 통해서입니다: {reasons}.",
    "shuffle.by_causal": "인과 마스크(어떤 Key가 Query보다 앞에 오는지가 순서에 달려 있음)",
    "shuffle.by_pe": "X에 더한 위치 인코딩",
    "shuffle.by_rope": "RoPE(q와 k를 위치만큼 회전)",
    "shuffle.by_bias": "위치에 따라 달라지는 바이어스(ALiBi 또는 score_bias)",
    "shuffle.by_custom_mask": "0/1 마스크(행과 열은 토큰과 함께 옮겼지만, 윈도우처럼 위치로 "
    "정한 마스크라면 옮기지 않았을 것)",
    "shuffle.not_a_number": "--shuffle의 {word!r}: 토큰 번호가 아닙니다. 1부터 {n}까지의 "
    "번호를 한 번씩 새 순서대로 쓰세요",
    "shuffle.not_a_permutation": "--shuffle {given!r}: 새 순서는 토큰 번호 1부터 {n}까지를 "
    "정확히 한 번씩 담아야 합니다 (토큰 n = {n}개)",
    "help.explain.shuffle": '토큰을 이 번호 순서("3 1 2")로 섞고 출력을 원래 출력과 '
    "비교합니다: 위치 정보도 인과 마스크도 없으면 행만 옮겨집니다.",
    "note.single_key": "Key가 하나뿐이면 스코어와 상관없이 소프트맥스는 언제나 그 Key에 "
    "가중치 1을 줍니다(e^0 / e^0). 경쟁할 상대가 없기 때문입니다. 가중치가 서로 경쟁하는 "
    "모습은 sentence 프리셋에서 볼 수 있습니다: qkvcalc explain --preset sentence.",
    "note.single_key_masked": "Key가 하나뿐이면 스코어와 상관없이 소프트맥스는 그 Key를 볼 수 "
    "있는 모든 행에서 그 Key에 가중치 1을 줍니다(e^0 / e^0). 경쟁할 상대가 없기 때문입니다. "
    "마스크가 그 Key를 가린 행은 전부 0입니다. 가중치가 서로 경쟁하는 모습은 sentence 프리셋에서 "
    "볼 수 있습니다: qkvcalc explain --preset sentence.",
    "note.gqa_why": "K/V 헤드를 나눠 쓰는 이유: 모델이 글을 생성할 때는 지난 토큰들의 Key와 "
    "Value를 모두 KV 캐시에 보관합니다. Key/Value 헤드가 H = {heads}개 대신 G = {kv_heads}개이면 "
    "이 캐시가 {ratio}분의 1로 줄고, 품질 손실은 작습니다(Ainslie et al. 2023).",
    "note.pad_rows": "<pad> 행에도 출력이 나옵니다: key_padding은 Key(열)를 막을 뿐 Query(행)는 "
    "막지 않으므로, 패딩 토큰의 Query도 다른 토큰처럼 실제 토큰들에 주목합니다. 그 행들은 "
    "아무 데도 쓰이지 않습니다. 어떤 Query도 패딩 Key에 주목하지 않고, 손실 계산과 풀링에서도 "
    "패딩 위치는 빠집니다.",
    "note.self_attention": "셀프 어텐션(Self-Attention): Query, Key, Value를 모두 같은 X에서 "
    "만들므로, 각 토큰이 자기 시퀀스의 모든 토큰(자기 자신 포함)과 비교됩니다.",
    "note.self_attention_state": "셀프 어텐션(Self-Attention): Query, Key, Value를 모두 같은 "
    "X에서 만듭니다. 이 층은 토큰 쌍을 직접 비교하지 않습니다. 각 토큰은 자기 Value를 Key 방향으로 "
    "상태에 쓰고 Query로 상태를 읽으므로, 자신과 앞선 토큰들이 쓴 것을 읽습니다.",
    "note.dv": "d_v = {d_v}: 출력의 폭을 정합니다. V가 m×d_v이므로 A·V는 n×d_v입니다. d_v가 "
    "d_k(여기서는 {d_k})와 같을 필요는 없습니다. 가중치는 각 Value를 얼마나 가져올지를, d_v는 "
    "Value 하나가 숫자를 몇 개 담는지를 정합니다.",
    "note.dv_state": "d_v = {d_v}: 출력의 폭을 정합니다. V가 m×d_v이고 상태가 d_k×d_v이므로 "
    "출력의 각 행(d_k개의 수인 Query 행으로 상태를 읽은 값)은 수 d_v개입니다. "
    "d_v가 d_k(여기서는 {d_k})와 같을 필요는 없습니다. 상태는 "
    "Key 채널마다 한 행, Value의 수마다 한 열을 둡니다.",
    "note.layout_torch": "PyTorch가 저장하는 방식(out×in)으로 주어진 행렬: {weight}. 여기 보이는 "
    "행렬은 그 전치 {weight}ᵀ(in×out)로, 행들에 곱해지는 행렬입니다.",
    # ---- warnings ------------------------------------------------------------------------
    "warn.fully_masked": "Query {rows}에서는 모든 Key가 마스킹되어, 공식을 그대로 쓰면 0/0 = NaN이 "
    "됩니다. 그래서 PyTorch의 scaled_dot_product_attention처럼 그 가중치와 출력을 0으로 "
    "둡니다.",
    "warn.fully_masked_head": "헤드 {head}, Query {rows}에서는 모든 Key가 마스킹되어, 공식을 "
    "그대로 쓰면 0/0 = NaN이 됩니다. 그래서 PyTorch의 scaled_dot_product_attention처럼 그 가중치와 "
    "출력을 0으로 둡니다.",
    "warn.tokens_dropped": "입력의 토큰 {count}개가 --x의 행 {rows}개와 맞지 않아 버렸습니다. "
    "토큰 이름은 t1, t2, …입니다.",
    # ---- the words of tables and arithmetic ------------------------------------------------
    "ui.gap_rounding": "{bound} 미만",
    "ui.head": "헤드 {head}",
    "ui.heads_group": "헤드 {head} (전체 {heads}개)",
    "ui.pair": "쌍 {pair}",
    "ui.pairs_group": "쌍 {pair} (전체 {pairs}개)",
    "ui.softmax_row": "{row}행 ({token}): 최댓값 = {max}; 지수함수 값의 합 = {sum}",
    "ui.masked_row": "{row}행 ({token}): {keys} → -∞",
    "ui.masked_row_lowp": "{row}행 ({token}): {keys} 마스킹됨 (마스킹된 칸에 무엇이 들어가는지는 "
    "노트에 있습니다)",
    "ui.all_masked_row": "{row}행 ({token}): 모든 Key가 마스킹됨, 가중치 0",
    "ui.warning": "경고",
    "ui.output_final": "출력",
    "ui.arithmetic": "계산 과정",
    "ui.problem": "Query 개수 n = {n}, Key 개수 m = {m}, d_model = {d_model}, d_k = {d_k}, "
    "d_v = {d_v}, 헤드 수 = {heads}, 마스크: {mask}",
    "ui.problem_direct": "Query 개수 n = {n}, Key 개수 m = {m} (Q, K, V 직접 입력), "
    "d_k = {d_k}, d_v = {d_v}, 헤드 수 = {heads}, 마스크: {mask}",
    "ui.variants": "추가: {items}",
    "ui.variant.pe_sinusoidal": "사인파 위치 인코딩",
    "ui.variant.pe_given": "주어진 위치 인코딩",
    "ui.variant.qk_norm": "q/k 정규화(RMSNorm)",
    "ui.variant.rope": "RoPE (밑 {theta}, {style}, {dims}차원)",
    "ui.variant.alibi": "ALiBi 거리 벌점",
    "ui.variant.score_bias": "스코어 바이어스",
    "ui.variant.sinks": "어텐션 싱크",
    "ui.variant.softcap": "소프트캡 {cap}",
    # ---- the output gate (qkvcalc/ops/gate.py) ----
    "ui.variant.gate": "출력 게이트 σ(X·W_G{bias}), 헤드마다",
    "stage.gate_logits.title": "출력 게이트: 게이트의 로짓",
    "stage.gate_logits.why": "게이트는 토큰이 스스로 정합니다. X에 W_G의 이 헤드 열을 곱하면(b_G를 "
    "더해) 토큰마다, 헤드 출력의 열마다 수가 하나씩 나오고, 다음 단계가 이 수를 (0, 1) 사이로 "
    "누릅니다.",
    "stage.gate.title": "출력 게이트: G = σ(Z_G)",
    "stage.gate.why": "시그모이드 σ(z) = 1 / (1 + e^(−z))는 각 로짓을 (0, 1) 사이로 누릅니다. 큰 "
    "음수 로짓은 0에 가까운 게이트를, 큰 양수 로짓은 1에 가까운 게이트를 주고, 0은 정확히 0.5를 "
    "줍니다.",
    "stage.gated.title": "게이트를 거친 출력",
    "stage.gated.why": "헤드 출력의 각 칸에 그 칸의 게이트를 곱합니다. 게이트가 0에 가까우면 이 "
    "토큰에서 이 헤드의 그 열을 끄고, 1에 가까우면 그대로 통과시킵니다. 어텐션 가중치는 무엇을 "
    "읽을지 정하고, 게이트는 읽은 것을 토큰마다 얼마나 내보낼지 정합니다(Qwen3-Next와 Qwen3.5가 "
    "어텐션에 이렇게 게이트를 답니다). 이어 붙이기는 게이트를 거친 이 출력을 읽습니다.",
    "hint.gate": "{cell} = σ(Z_G[{i},{j}]) = 1 / (1 + e^(−Z_G[{i},{j}])).",
    "hint.gated": "{cell} = {out}[{i},{j}] × G[{i},{j}]: 헤드 출력에 게이트를 칸마다 곱합니다.",
    "note.exact_stops_sigmoid": "여기부터는 정확한 분수가 없습니다: 0이 아닌 유리수 z에 대해 "
    "σ(z) = 1 / (1 + e^(−z))는 무리수입니다(린데만–바이어슈트라스 정리에 따라 e^(−z)가 "
    "초월수이므로). σ(0) = 1/2만 예외입니다.",
    "mistake.gate_missing": "이 값은 게이트를 거치기 전의 헤드 출력입니다. 각 칸에 게이트 "
    "G = σ(Z_G)를 아직 곱해야 합니다.",
    "mistake.gate_not_squashed": "이 값은 출력에 G = σ(Z_G)가 아니라 게이트의 로짓 Z_G를 "
    "곱했습니다. 각 로짓을 (0, 1) 사이로 누르는 시그모이드가 빠졌습니다.",
    "stage.grad_output.gated.title": "역전파: 게이트를 거쳐 헤드 출력으로",
    "stage.grad_output.gated.why": "out_G = out ⊙ G이므로 헤드 출력의 각 칸은 자기 기울기에 자기 "
    "게이트를 곱한 값을 받습니다: dO = d(out_G) ⊙ G. 0에 가까운 게이트는 그 아래의 어텐션으로 "
    "거의 아무것도 돌려보내지 않습니다.",
    "stage.grad_gate.title": "역전파: 게이트의 기울기",
    "stage.grad_gate.why": "같은 곱을 게이트 쪽에서 봅니다: dG = d(out_G) ⊙ out. 그래서 게이트의 "
    "기울기는 게이트를 거친 출력의 기울기에 헤드가 읽은 값을 곱한 것입니다. 헤드 출력이 0인 "
    "곳에서는 게이트가 아무것도 배우지 않습니다.",
    "stage.grad_gate_logits.title": "역전파: 시그모이드를 거쳐",
    "stage.grad_gate_logits.why": "σ'(z) = σ(z)·(1 − σ(z))이고, 가장 큰 값은 z = 0에서의 "
    "1/4입니다: dZ_G = dG ⊙ G ⊙ (1 − G). 거의 닫히거나 거의 열린 게이트(G가 0이나 1에 "
    "가까움)는 자기 기울기를 W_G로 거의 전하지 않습니다.",
    "stage.grad_wg.title": "W_G의 기울기",
    "stage.grad_wg.why": "Z_G = X·W_G (+ b_G)이므로 dW_G = Xᵀ·dZ_G이고, 각 헤드의 기울기는 자기 "
    "열에 놓입니다. 각 가중치는 토큰들에 걸쳐 자기 입력값과 로짓 기울기의 곱을 모읍니다.",
    "stage.grad_bg.title": "b_G의 기울기",
    "stage.grad_bg.why": "b_G는 모든 토큰의 게이트 로짓에 더해지므로, 그 기울기는 dZ_G의 열 "
    "합입니다.",
    "gate.shape": "W_G(wg)의 모양은 {shape}이지만, 출력 게이트에는 {layout} 레이아웃으로 {want} "
    "모양이 필요합니다: 각 토큰의 X 행(d_model개의 수)을 H·d_v = {heads}×{d_v}개의 게이트로, "
    "모든 헤드 출력의 열마다 하나씩 보냅니다.",
    "gate.bias_shape": "b_G(bg)의 길이는 {length}이지만, 출력 게이트의 열은 H·d_v = "
    "{cols}개입니다: 게이트마다 편향이 하나씩 필요합니다.",
    "gate.bias_alone": "W_G(wg) 없이 b_G(bg)만 주어졌습니다: 출력 게이트의 편향에는 가중치가 "
    "필요합니다.",
    "gate.needs_x": "출력 게이트(wg)는 X를 읽는데, 이 문제는 Q, K, V를 직접 줍니다: 대신 x와 "
    "가중치를 주세요.",
    "gate.train": "train은 아직 출력 게이트의 W_G와 b_G를 학습하지 않으며, 게이트를 주어진 "
    "그대로 둔 채 어텐션만 배우는 모습을 보이게 됩니다: 학습하려면 wg와 bg를 빼거나, 그 기울기는 "
    "explain --backward로 보세요.",
    "gate.decode": "출력 게이트(wg)는 KV 캐시로 한 단계씩 계산하지 않습니다: --decode를 빼세요"
    "(전체 실행에서 보입니다).",
    "ui.variant.gate_softplus": "출력 게이트 softplus(X·W_G{bias}), 헤드마다",
    "stage.gate_logits_softplus.title": "출력 게이트: 게이트의 로짓",
    "stage.gate_logits_softplus.why": "게이트는 토큰이 스스로 정합니다. X에 W_G의 이 헤드 열을 "
    "곱하면(b_G를 더해) 토큰마다, 헤드 출력의 열마다 수가 하나씩 나오고, 다음 단계가 softplus로 "
    "이 수를 양수인 게이트로 바꿉니다.",
    "stage.gate_softplus.title": "출력 게이트: G = softplus(Z_G)",
    "stage.gate_softplus.why": "softplus(z) = ln(1 + e^z)는 각 로짓을 (0, 1) 사이가 아니라 위로 "
    "한계가 없는 양수로 바꿉니다. 큰 음수 로짓은 0에 가까운 게이트를, 큰 양수 로짓은 로짓 자신에 "
    "가까운 게이트를 주고, 0은 ln 2 ≈ 0.6931을 줍니다(Laguna의 게이트).",
    "stage.gated_softplus.title": "게이트를 거친 출력",
    "stage.gated_softplus.why": "헤드 출력의 각 칸에 그 칸의 게이트를 곱합니다. 게이트가 0에 "
    "가까우면 이 토큰에서 이 헤드의 그 열을 끄고, 1보다 크면 키웁니다. 어텐션 가중치는 무엇을 "
    "읽을지 정하고, 게이트는 읽은 것을 토큰마다 얼마나 내보낼지 정합니다(Laguna가 softplus로 "
    "어텐션에 이렇게 게이트를 답니다). 이어 붙이기는 게이트를 거친 이 출력을 읽습니다.",
    "hint.gate_softplus": "{cell} = softplus(Z_G[{i},{j}]) = ln(1 + e^(Z_G[{i},{j}])).",
    "note.exact_stops_softplus": "여기부터는 정확한 분수가 없습니다: 모든 유리수 z에 대해 "
    "softplus(z) = ln(1 + e^z)는 무리수입니다(e^r = 1 + e^z인 유리수 r이 있다면 e^r, e^z, e^0 "
    "사이의 일차 관계가 되는데, 린데만–바이어슈트라스 정리가 이를 금합니다).",
    "mistake.gate_missing_softplus": "이 값은 게이트를 거치기 전의 헤드 출력입니다. 각 칸에 "
    "게이트 G = softplus(Z_G)를 아직 곱해야 합니다.",
    "mistake.gate_not_squashed_softplus": "이 값은 출력에 G = softplus(Z_G)가 아니라 게이트의 "
    "로짓 Z_G를 곱했습니다. softplus, 곧 ln(1 + e^z)가 빠졌습니다.",
    "mistake.gate_sigmoid": "이 값은 출력에 σ(Z_G)를 곱했지만, 이 게이트는 시그모이드가 아니라 "
    "G = softplus(Z_G) = ln(1 + e^(Z_G))입니다.",
    "stage.grad_gate_logits_softplus.title": "역전파: softplus를 거쳐",
    "stage.grad_gate_logits_softplus.why": "softplus'(z) = e^z / (1 + e^z) = σ(z)이고, 0과 1 "
    "사이입니다: dZ_G = dG ⊙ σ(Z_G). 로짓이 아주 작은 음수인 게이트(G가 0에 가까움)는 자기 "
    "기울기를 W_G로 거의 전하지 않고, 로짓이 크면 거의 모두 전합니다.",
    "gate.act_alone": "W_G(wg) 없이 gate_act만 주어졌습니다: 출력 게이트의 활성화 함수에는 "
    "가중치가 필요합니다.",
    "gate.act": "gate_act의 값은 {given}이지만, 출력 게이트의 활성화 함수는 다음 중 하나입니다: "
    "{acts}.",
    # ---- Gated DeltaNet, a linear-attention layer (qkvcalc/ops/gated_delta.py) ----
    "ui.variant.gated_delta": "선형 어텐션 층: Gated DeltaNet(Qwen3-Next, Qwen3.5), 청크 형식의 "
    "청크 크기 {chunk}",
    "ui.token_step": "토큰 {step}",
    "stage.q_l2.title": "Gated DeltaNet: L2 정규화하고 스케일링한 Query",
    "stage.q_l2.why": "층은 Query의 각 행을 그 길이(√(Σx² + 10⁻⁶), 그래서 0으로 된 행은 그대로 "
    "0)로 나눈 뒤 √d_k로 다시 나눕니다(문제에 scale이 주어지면 √d_k로 나누는 대신 그 값을 "
    "곱합니다). transformers의 torch_recurrent_gated_delta_rule이 "
    "use_qk_l2norm_in_kernel로 하는 계산과 같습니다. 그러면 투영의 크기와 상관없이 모든 Query가 "
    "같은 세기로 상태를 읽습니다.",
    "stage.k_l2.title": "Gated DeltaNet: L2 정규화한 Key",
    "stage.k_l2.why": "Key의 각 행을 그 길이로 나눕니다. 아래의 델타 규칙은 β·(v − S'ᵀk̂)를 k̂ "
    "방향으로 쓰는데, |k̂| = 1이면 β = 1일 때 상태가 그 Key에 대해 갖고 있던 것을 정확히 바꿔 "
    "씁니다.",
    "stage.gates.title": "Gated DeltaNet: 토큰마다의 감쇠 g와 쓰기 세기 β",
    "stage.gates.why": "토큰마다, 헤드마다 주어집니다. g는 로그 공간의 감쇠입니다: 토큰이 쓰기 "
    "전에 상태에 e^g를 곱합니다(Qwen3-Next는 g = −e^(A_log)·softplus(a + dt_bias)로 계산하므로 "
    "e^g는 (0, 1) 안에 있습니다). β는 토큰이 보정을 얼마나 쓰는지를 정합니다(Qwen3-Next: β = "
    "σ(b)).",
    "stage.state.title": "Gated DeltaNet: 이 토큰 다음의 상태",
    "stage.state.why": "상태 S(d_k × d_v)는 토큰이 몇 개였든 층이 지금까지의 토큰에서 간직하는 "
    "전부입니다. 토큰마다 상태를 감쇠시키고(S' = e^g·S), 자기 Key에 대해 상태가 이미 가진 것을 "
    "읽고(m = S'ᵀ·k̂), 자기 Value와의 차이를 자기 Key 방향으로 씁니다: S = S' + k̂·(β·(v − m))ᵀ. "
    "이것이 델타 규칙입니다: 기억에 더하지 않고 기억을 고칩니다.",
    "stage.gdn_weights.title": "Gated DeltaNet: 만들지 않고 계산하는 어텐션 행렬",
    "stage.gdn_weights.why": "q, k, g, β를 고정하면 출력의 각 행은 그 토큰까지의 Value 행들의 "
    "가중합입니다. 이 표가 그 가중치입니다(Query마다 한 행, 하삼각: 층은 인과적입니다). 층은 이 "
    "n×n 행렬을 만들지 않고 d_k × d_v 상태만 만듭니다. 소프트맥스 어텐션과 나란히 놓아 보세요: "
    "행의 합이 1일 필요가 없고 음수일 수도 있으며, 토큰의 가중치는 감쇠와, 비슷한 Key 방향으로 "
    "나중에 쓰는 모든 쓰기 때문에 줄어듭니다.",
    "stage.chunked.title": "Gated DeltaNet: 청크 형식",
    "stage.chunked.why": "층이 시퀀스 전체에 실제로 쓰는 "
    "계산입니다(torch_chunk_gated_delta_rule): 청크 안에서는 델타 규칙의 갱신들을 단위 하삼각 "
    "연립방정식 하나로 한꺼번에 풀고(DeltaNet 논문의 UT 변환), 상태를 청크에서 청크로 넘깁니다. "
    "토큰마다 한 단계씩보다 더 적고 더 큰 행렬곱으로 같은 출력을 냅니다.",
    "stage.gdn_output.title": "Gated DeltaNet: 상태에서 읽은 출력",
    "stage.gdn_output.why": "각 토큰은 방금 쓴 상태를 자기 Query로 읽습니다: o_t = S_tᵀ·q̂_t. "
    "Qwen3-Next에서는 이 출력이 게이트가 있는 RMSNorm(SiLU(z)를 곱함)과 out_proj를 더 거치는데, "
    "여기서는 보여 주지 않습니다.",
    "note.gdn_l2norm": "l2norm(x) = x / √(Σx² + 10⁻⁶), 행마다 계산합니다: eps = 1e-6인 "
    "transformers의 l2norm과 같습니다.",
    "note.gdn_state": "S_0 = 0. 각 칸: e^(g_t)·S_{{t−1}}[i,j] + k̂_t[i]·β_t·(v_t[j] − m_t[j]). "
    "여기서 m_t[j] = e^(g_t)·Σ_r S_{{t−1}}[r,j]·k̂_t[r]는 감쇠한 상태가 j열에서 이 Key에 대해 "
    "가진 값입니다.",
    "note.gdn_weights": "W[t,s] = β_s·k̂_sᵀ·A_(s+1)⋯A_t·q̂_t, A_r = e^(g_r)·(I − "
    "β_r·k̂_r·k̂_rᵀ): 토큰 s가 쓴 것을 t까지의 모든 단계를 거쳐 옮긴 뒤 q̂_t로 읽은 값입니다.",
    "note.gdn_weights_work": "각 칸의 계산 과정은 행을 대각선에서 왼쪽으로 따라갑니다: "
    "W[t,s] = β_s·(e^(g_(s+1)+…+g_t)·k̂_s·q̂_t − Σ_(r = s+1…t) e^(g_(s+1)+…+g_r)·W[t,r]·"
    "k̂_s·k̂_r). 토큰 s의 Key와 Query의 내적을 감쇠시킨 값에서, 뒤에 오는 토큰 r마다 그 가중치에 "
    "k̂_r과 k̂_s가 겹치는 정도를 곱한 값(델타 규칙이 덮어쓴 부분)을 뺍니다. 내적은 위의 Q̂와 K̂로 "
    "계산합니다.",
    "note.gdn_linear_in_v": "W·V는 반올림 오차 안에서 이 출력과 같습니다: 가장 큰 차이는 {diff}. "
    "q, k, g, β를 고정하면 층은 V에 대해 선형입니다(Qwen3-Next의 게이트가 있는 정규화 앞까지; 그 "
    "정규화는 선형이 아닙니다).",
    "note.gdn_linear_in_v_far": "W·V와 이 출력의 차이가 최대 {diff}입니다: 수가 너무 커서 "
    "float64가 둘을 같게 유지하지 못합니다.",
    "note.gdn_chunked_equal": "청크 형식도 반올림 오차 안에서 같은 출력을 냅니다: 가장 큰 차이는 "
    "{diff}.",
    "note.gdn_chunked_far": "청크 형식과 이 출력의 차이가 최대 {diff}입니다: 감쇠가 너무 "
    "극단적이어서 float64가 두 형식을 같게 유지하지 못합니다.",
    "note.exact_stops_l2norm": "여기부터는 정확한 분수가 없습니다: L2 정규화는 √(Σx² + 10⁻⁶)로 "
    "나누는데, 몇몇 행을 빼면 유리수 행에서도 이 값은 무리수입니다.",
    "mistake.gdn_decay_missing": "이 값은 감쇠를 뺐습니다: 모든 g_t가 0인 것처럼 상태에 "
    "e^(g_t)를 한 번도 곱하지 않았습니다. 각 토큰은 먼저 상태를 감쇠시키고(S' = "
    "e^(g_t)·S_(t−1)) 그다음에 읽고 씁니다.",
    "mistake.gdn_delta_missing": "이 값은 상태에 β_t·k̂_t·v_tᵀ를 더했습니다. 게이트가 있는 선형 "
    "어텐션의 계산입니다(감쇠는 있고 델타 규칙은 없음). 델타 규칙은 먼저 감쇠한 상태가 토큰의 "
    "Key에 대해 가진 값 m_t = S'ᵀ·k̂_t를 읽고, 그 차이만 씁니다: "
    "S_t = S' + k̂_t·(β_t·(v_t − m_t))ᵀ.",
    "gated_delta.not_object": 'gated_delta는 {{"g": [...], "beta": [...]}} 같은 객체여야 '
    "합니다. 받은 값: {value}",
    "gated_delta.unknown_key": "gated_delta에 없는 키입니다: {key}. 쓸 수 있는 키: {known}",
    "gated_delta.needs": "gated_delta에는 g(토큰마다 로그 공간의 감쇠)와 beta(β, 쓰기 세기)가 둘 "
    "다, 토큰과 헤드마다 수 하나씩 있어야 합니다. 아니면 X로 그것을 만드는 wa, wb, a_log, "
    "dt_bias를 주세요.",
    "gated_delta.shape": "gated_delta의 {field}의 모양은 {shape}인데, 토큰마다 한 행, 헤드마다 "
    "한 열이 필요합니다: n×H = {n}×{heads}.",
    "gated_delta.shape_flat": "gated_delta의 {field}에 수 {count}개의 1차원 목록이 주어졌는데, "
    "토큰마다, 헤드마다 수가 하나씩 필요합니다: n×H = {n}×{heads}(수 n개의 1차원 목록은 헤드가 "
    "하나일 때만 됩니다).",
    "gated_delta.g_positive": "gated_delta의 g가 토큰 {token}, 헤드 {head}에서 0보다 큽니다: g는 "
    "로그 공간의 감쇠이고, 상태에는 e^g ≤ 1을 곱합니다(Qwen3-Next는 "
    "g = −e^(A_log)·softplus(a + dt_bias) < 0으로 만듭니다).",
    "gated_delta.mask": "Gated DeltaNet 층은 본래 인과적입니다(각 토큰은 자기까지의 토큰이 쓴 "
    '상태를 읽습니다): mask를 "causal"(인과 마스크)로 주세요. 지금 마스크: {mask}("mask" '
    "키가 없는 문제는 none입니다)",
    "gated_delta.cross": "Gated DeltaNet 층은 자기 토큰을 읽습니다: Q의 행 수는 {n}, K와 V의 행 "
    "수는 {m}입니다. 행 수가 같아야 합니다.",
    "gated_delta.kv_heads": "Gated DeltaNet 문제에는 K/V 헤드가 헤드 수만큼 있어야 합니다(지금 "
    "heads = {heads}, kv_heads = {kv_heads}): kv_heads를 빼세요.",
    "gated_delta.chunk": "gated_delta의 chunk(청크 형식의 청크 크기)는 1 이상의 정수여야 합니다. "
    "받은 값: {value}",
    "gated_delta.alone": "Gated DeltaNet 층(gated_delta)에는 스코어도 소프트맥스도 없어서 "
    "어텐션의 다른 기능은 적용되지 않습니다. 빼야 할 기능: {others}.",
    "gated_delta.decode": "Gated DeltaNet 층(gated_delta)은 이미 상태를 거쳐 토큰 하나씩 "
    "계산합니다: --decode를 빼세요.",
    "gated_delta.tiles": "Gated DeltaNet 층(gated_delta)에는 타일로 나눠 계산할 소프트맥스가 "
    "없습니다: --tiles를 빼세요.",
    # ---- lightning attention, MiniMax's linear-attention layer (qkvcalc/ops/lightning.py) ----
    "ui.variant.lightning": "선형 어텐션 층: MiniMax의 라이트닝 어텐션, 각 헤드의 감쇠율 λ: "
    "{slopes}, 블록 형식의 블록 크기: {block}",
    "stage.q_silu.title": "라이트닝 어텐션: Query의 silu",
    "stage.q_silu.why": "MiniMax는 투영 전체에 silu(x) = x·σ(x)를 적용한 뒤 Query, Key, Value로 "
    "나눕니다(qkv_proj 출력에 act_fn). 뒤에 가중치를 양수로 만들어 줄 소프트맥스가 없습니다. "
    "silu는 양수는 거의 그대로 통과시키고 음수는 작은 음수로 바꿉니다(−0.28보다 작아지지 않음).",
    "stage.k_silu.title": "라이트닝 어텐션: Key의 silu",
    "stage.k_silu.why": "같은 silu(x) = x·σ(x)를 Key에 적용합니다.",
    "stage.v_silu.title": "라이트닝 어텐션: Value의 silu",
    "stage.v_silu.why": "같은 silu(x) = x·σ(x)를 Value에 적용합니다.",
    "stage.lightning_state.title": "라이트닝 어텐션: 이 토큰 다음의 상태",
    "stage.lightning_state.why": "상태 S(d_k × d_v)는 층이 지금까지의 토큰에서 간직하는 "
    "전부입니다. 토큰마다 헤드의 고정된 감쇠 e^(−λ)를 상태에 곱하고, 자기 Key와 자기 Value의 곱 "
    "k·vᵀ를 더합니다: 감쇠가 있는 선형 어텐션이며, 다시 읽어 고치는 단계(델타 규칙)는 없습니다. "
    "λ는 헤드의 기울기입니다: MiniMax는 헤드마다 다른 값을 주고, 뒤쪽 층일수록 더 작습니다.",
    "stage.lightning_weights.title": "라이트닝 어텐션: 만들지 않고 계산하는 어텐션 행렬",
    "stage.lightning_weights.why": "q와 k를 고정하면 출력의 각 행은 그 토큰까지의 Value 행들의 "
    "가중합입니다. 이 표가 그 가중치입니다(Query마다 한 행, 하삼각: 층은 인과적입니다). 각 값은 "
    "단순한 곱 q_t·k_s에, s에서 t까지 한 단계마다 한 번씩 e^(−λ)를 곱한 것입니다. 소프트맥스 "
    "어텐션과 나란히 놓아 보세요: 스코어의 지수도, 행 합으로 나누기도 없어서 행의 합이 1일 필요가 "
    "없고 음수일 수도 있습니다.",
    "stage.lightning_chunked.title": "라이트닝 어텐션: 블록 형식",
    "stage.lightning_chunked.why": "MiniMax가 시퀀스 전체에 실제로 쓰는 계산입니다: B개 토큰의 "
    "블록 단위. 블록 안에서는 ((Q·Kᵀ) ⊙ D)·V, 여기서 i ≥ j일 때 D[i, j] = e^(−λ·(i − j))입니다"
    "(블록 내부 부분). 앞 블록들에서는 그 블록들이 남긴 상태를, e^(−λ·(i + 1))로 감쇠한 각 "
    "Query로 읽습니다(블록 사이 부분). 그다음 상태를 넘깁니다. 토큰마다 한 단계씩 계산한 것과 "
    "같은 출력을 더 적고 더 큰 행렬곱으로 냅니다.",
    "stage.lightning_output.title": "라이트닝 어텐션: 상태에서 읽은 출력",
    "stage.lightning_output.why": "각 토큰은 방금 쓴 상태를 자기 Query로 읽습니다: o_t = "
    "S_tᵀ·q_t. 1/√d_k로 스케일링하지 않습니다.",
    "stage.o_rms.title": "라이트닝 어텐션: 모든 헤드에 걸친 각 행의 제곱평균제곱근",
    "stage.o_rms.why": "MiniMax는 헤드들의 출력을 나란히 이어 붙이고, 전체 너비에 걸친 RMSNorm "
    "하나로 각 행을 정규화합니다: 토큰마다 근 하나를 모든 헤드가 함께 쓰므로, 행에서 각 헤드가 "
    "차지하는 몫은 그대로입니다.",
    "stage.o_norm.title": "라이트닝 어텐션: 정규화한 헤드 출력",
    "stage.o_norm.why": "각 헤드의 출력을 그 행의 근(모든 헤드가 함께 씀)으로 나누고, 정규화의 "
    "학습된 가중치 중 그 헤드의 열을 곱합니다.",
    "stage.lightning_gated.title": "라이트닝 어텐션: 게이트를 곱한 헤드 출력",
    "stage.lightning_gated.why": "앞 단계의 각 칸에 그 게이트 σ(X·W_G)를 곱합니다. 토큰 자신이 "
    "정하는 값입니다(MiniMax: 정규화한 출력에 sigmoid(output_gate(x))를 곱함). 그다음 헤드들을 "
    "이어 붙이고 out_proj(W_O)가 섞습니다.",
    "stage.lightning_grad_state.title": "역전파: 거꾸로 따라가는 상태의 기울기",
    "stage.lightning_grad_state.why": "S_t는 두 번 읽힙니다: 이 토큰의 출력 o_t = S_tᵀ·q_t, 그리고 "
    "다음 상태 S_(t+1) = e^(−λ)·S_t + k_(t+1)·v_(t+1)ᵀ. 그래서 그 기울기는 q_t·do_tᵀ(출력에서)에 "
    "다음 상태의 기울기의 e^(−λ)배를 더한 것입니다: 상태들을 마지막 토큰에서 첫 토큰으로 거슬러 "
    "가며, 뒤 토큰의 출력이 상태에 요구하는 것은 한 단계마다 한 번씩 감쇠하여 앞 토큰들에 "
    "닿습니다.",
    "stage.lightning_grad_q.title": "역전파: dQ, 각 Query는 자신이 읽은 상태에서",
    "stage.lightning_grad_q.why": "o_t = S_tᵀ·q_t이므로 상태를 고정하면 출력은 q_t에 대해 "
    "선형입니다: dq_t = S_t·do_t, 토큰 t가 읽은 상태에 그 출력의 기울기를 곱한 것입니다.",
    "stage.lightning_grad_k.title": "역전파: dK, 각 Key는 상태의 기울기에서",
    "stage.lightning_grad_k.why": "토큰 t는 k_t·v_tᵀ를 S_t에 썼으므로 dk_t = dS_t·v_t입니다: "
    "t에서의 상태의 기울기(뒤 토큰들이 상태에 요구하는 것을 이미 모두 담은 값)에 그 토큰 자신의 "
    "Value를 곱한 것입니다.",
    "stage.lightning_grad_v.title": "역전파: dV, 각 Value는 상태의 기울기에서",
    "stage.lightning_grad_v.why": "같은 쓰기 k_t·v_tᵀ를 Value 쪽에서 본 것입니다: "
    "dv_t = dS_tᵀ·k_t.",
    "stage.grad_back.silu.title": "silu를 거치는 역전파",
    "stage.grad_back.silu.why": "silu(x) = x·σ(x)의 도함수는 σ(x)·(1 + x·(1 − σ(x)))입니다: "
    "x가 큰 양수이면 약 1, 큰 음수이면 약 0(silu가 거기서 평평해짐), x = 0에서 ½입니다.",
    "stage.lightning_rms_share.title": "역전파: 근의 기울기 중 이 헤드의 몫",
    "stage.lightning_rms_share.why": "out_N = out / r ⊙ w이고, r(행마다 하나)은 모든 헤드가 함께 "
    "씁니다: 각 헤드는 dr의 자기 몫 −Σⱼ d(out_N)ⱼ·wⱼ·outⱼ / r²를 돌려주고, 몫들을 더합니다.",
    "stage.grad_o_rms.title": "역전파: 각 행의 근의 기울기",
    "stage.grad_o_rms.why": "근 r은 모든 헤드의 정규화한 출력이 읽었으므로, 그 기울기는 모든 "
    "헤드의 몫을 더한 것입니다(연쇄 법칙의 경로별 합).",
    "stage.lightning_rms_back.title": "역전파: 이어 붙인 헤드들에 걸친 정규화를 거쳐",
    "stage.lightning_rms_back.why": "헤드 출력의 각 칸은 두 경로로 손실에 닿았습니다: r로 나누고 "
    "가중치를 곱한 경로 d(out_N) ⊙ w / r, 그리고 r 자체를 거치는 경로 ∂r/∂out = out / (D·r)"
    "(D는 이어 붙인 너비)에 dr을 곱한 것. 둘을 더합니다.",
    "note.lightning_grad_state": "마지막 토큰에서 거슬러 갑니다: dS_(n+1) = 0(마지막 상태는 그 "
    "토큰의 출력 말고는 읽는 곳이 없음). 각 칸: q_t[i]·do_t[j] + e^(−λ)·dS_(t+1)[i,j], 여기서 "
    "λ = {slope}, e^(−λ) ≈ {decay}.",
    "stage.grad_lightning_norm.title": "역전파: 정규화 가중치의 기울기",
    "stage.grad_lightning_norm.why": "out_N = out / r ⊙ w: 각 가중치는 모든 행에서 정규화한 출력의 "
    "한 열에 곱해졌으므로, 그 기울기는 토큰들에 걸쳐 그 열의 d(out_N)에 out / r을 곱해 더한 "
    "것입니다.",
    "hint.lightning_grad_state": "{cell} = q_{t}[{i}]·do_{t}[{j}] + e^(−λ)·dS_{next}[{i},{j}]: "
    "이 토큰의 Query에 그 출력의 기울기를 곱한 값에, 한 번 감쇠한 다음 상태의 기울기를 더합니다"
    "(마지막 토큰의 상태에는 앞 항만 있음).",
    "hint.lightning_grad_q": "{cell} 칸: 토큰 {i} 다음 상태(S_{i}) 안의 행 {j} 곱하기 {other} "
    "행렬 안의 행 {i}, 짝끼리 곱해 더합니다: Σ_c S_{i}[{j},c]·{other}[{i},c].",
    "hint.lightning_grad_k": "{cell} 칸: dS_{i} 행렬 안의 행 {j} 곱하기 {other} 행렬 안의 행 {i}, "
    "짝끼리 곱해 더합니다: Σ_c dS_{i}[{j},c]·{other}[{i},c].",
    "hint.lightning_grad_v": "{cell} 칸: dS_{i} 행렬 안의 열 {j} 곱하기 {other} 행렬 안의 행 {i}, "
    "짝끼리 곱해 더합니다: Σ_c dS_{i}[c,{j}]·{other}[{i},c].",
    "stage.gdn_grad_state.title": "역전파: 거꾸로 따라가는 상태의 기울기",
    "stage.gdn_grad_state.why": "S_t는 이 토큰의 출력 o_t = S_tᵀ·q̂_t와 다음 상태 S_(t+1) = "
    "A_(t+1)·S_t + β_(t+1)·k̂_(t+1)·v_(t+1)ᵀ(A = e^g·(I − β·k̂·k̂ᵀ))가 읽습니다. 그래서 그 기울기는 "
    "q̂_t·do_tᵀ에 다음 상태의 기울기의 A_(t+1)배를 더한 것입니다(A는 대칭): 마지막 토큰에서 "
    "거슬러 가며, 한 단계마다 e^g로 감쇠하고 델타 규칙이 덮어쓴 부분을 다음 Key 방향에서 뺍니다.",
    "stage.gdn_grad_q.title": "역전파: dQ̂, 정규화한 각 Query는 자신이 읽은 상태에서",
    "stage.gdn_grad_q.why": "o_t = S_tᵀ·q̂_t이므로 dq̂_t = S_t·do_t: 토큰 t가 읽은 상태에 그 "
    "출력의 기울기를 곱한 것입니다.",
    "stage.gdn_grad_k.title": "역전파: dK̂, 정규화한 각 Key는 상태의 기울기에서",
    "stage.gdn_grad_k.why": "Key는 상태를 읽기도 하고(m_t = S'_tᵀ·k̂_t, S'_t = e^(g_t)·S_(t−1)) "
    "자기 방향으로 쓰기도 하므로 두 항을 받습니다: 쓰기에서 β_t·dS_t·u_t(u_t = v_t − m_t, 새로운 "
    "것), 읽기에서 −β_t·S'_t·c_t(c_t = dS_tᵀ·k̂_t).",
    "stage.gdn_grad_v.title": "역전파: dV, 각 Value는 상태의 기울기에서",
    "stage.gdn_grad_v.why": "토큰 t는 β_t·k̂_t·v_tᵀ를 썼으므로(상태가 이미 가진 것을 빼고) "
    "dv_t = β_t·dS_tᵀ·k̂_t = β_t·c_t입니다.",
    "stage.gdn_grad_gates.title": "역전파: g와 β의 기울기",
    "stage.gdn_grad_gates.why": "dβ_t = c_t·u_t: 쓰기 세기가 얼마나 도움이 되는지, Key 방향의 "
    "기울기 곱하기 새로운 것. dg_t: 감쇠는 S'_t = e^(g_t)·S_(t−1)를 곱했으므로, dg_t는 "
    "(I − β_t·k̂_t·k̂_tᵀ)·dS_t(S'_t가 받은 기울기)의 칸과 S'_t의 칸을 곱해 더한 것입니다. 첫 "
    "토큰은 S_0 = 0이므로 0입니다.",
    "stage.grad_back.l2norm.title": "L2 정규화를 거치는 역전파",
    "stage.grad_back.l2norm.why": "y = s·x·ρ, ρ = 1/√(Σx² + 10⁻⁶): dx = s·(ρ·dy − x·ρ³·Σ(x ⊙ "
    "dy)). dy 중 x 자신의 방향 성분은 빠집니다: 정규화한 행은 더 길어질 수 없습니다.",
    "note.gdn_grad_state": "마지막 토큰에서 거슬러 갑니다: dS_(n+1) = 0. 각 칸: q̂_t[i]·do_t[j] + "
    "e^(g_(t+1))·(dS_(t+1)[i,j] − β_(t+1)·k̂_(t+1)[i]·c_j), c = dS_(t+1)ᵀ·k̂_(t+1).",
    "hint.gdn_grad_state": "{cell} = q̂_{t}[{i}]·do_{t}[{j}] + e^(g_{next})·(dS_{next}[{i},{j}] − "
    "β_{next}·k̂_{next}[{i}]·c_{j}), c = dS_{next}ᵀ·k̂_{next}(마지막 토큰의 상태에는 앞 항만 있음).",
    "stage.kda_grad_state.title": "역전파: 거꾸로 따라가는 상태의 기울기",
    "stage.kda_grad_state.why": "S_t는 이 토큰의 출력 o_t = S_tᵀ·q̂_t와 다음 상태 S_(t+1) = "
    "A_(t+1)·S_t + β_(t+1)·k̂_(t+1)·v_(t+1)ᵀ(A = (I − β·k̂·k̂ᵀ)·Diag(e^g): 감쇠가 먼저, 그다음 "
    "델타 규칙)가 읽습니다. 그래서 그 기울기는 q̂_t·do_tᵀ에 다음 토큰의 Aᵀ = Diag(e^g)·(I − "
    "β·k̂·k̂ᵀ)와 다음 상태의 기울기의 곱을 "
    "더한 것입니다: 마지막 토큰에서 거슬러 가며, 한 단계마다 델타 규칙이 덮어쓴 부분을 다음 Key "
    "방향에서 빼고, 행 c를 자기 e^(g[c])로 감쇠합니다.",
    "stage.kda_grad_gates.title": "역전파: 채널마다의 g와 β의 기울기",
    "stage.kda_grad_gates.why": "dβ_t = c_t·u_t, Gated DeltaNet과 같습니다. dg_t[c]: 감쇠는 "
    "상태의 행 c에 곱해졌으므로(S'_t[c, :] = e^(g_t[c])·S_(t−1)[c, :]), dg_t[c]는 "
    "(I − β_t·k̂_t·k̂_tᵀ)·dS_t(S'_t가 받은 기울기)의 행 c의 칸과 S'_t의 행 c의 칸을 곱해 더한 "
    "것입니다: Key 채널마다 수 하나. 첫 토큰은 S_0 = 0이므로 0입니다.",
    "note.kda_grad_state": "마지막 토큰에서 거슬러 갑니다: dS_(n+1) = 0. 각 칸: q̂_t[i]·do_t[j] + "
    "e^(g_(t+1)[i])·(dS_(t+1)[i,j] − β_(t+1)·k̂_(t+1)[i]·c_j), c = dS_(t+1)ᵀ·k̂_(t+1): 행 i는 자기 "
    "채널의 e^g로 감쇠합니다.",
    "hint.kda_grad_state": "{cell} = q̂_{t}[{i}]·do_{t}[{j}] + "
    "e^(g_{next}[{i}])·(dS_{next}[{i},{j}] − β_{next}·k̂_{next}[{i}]·c_{j}), "
    "c = dS_{next}ᵀ·k̂_{next}(마지막 토큰의 상태에는 앞 항만 있음).",
    "stage.gdn_grad_normed.title": "역전파: 게이트를 거쳐 정규화한 출력으로",
    "stage.gdn_grad_normed.why": "out_Z = N ⊙ act(Z)이므로 N의 각 칸은 자기 게이트를 곱한 기울기를 "
    "받습니다: dN = d(out_Z) ⊙ act(Z)(Gated DeltaNet에서는 SiLU(Z)).",
    "stage.gdn_grad_z.title": "역전파: 게이트 입력 Z의 기울기",
    "stage.gdn_grad_z.why": "같은 곱을 게이트 쪽에서 본 것입니다: dZ = d(out_Z) ⊙ N ⊙ act'(Z), "
    "SiLU'(z) = σ(z)·(1 + z·(1 − σ(z))).",
    "stage.grad_back.gdn_rms.title": "게이트 정규화의 RMSNorm을 거치는 역전파",
    "stage.grad_back.gdn_rms.why": "N = out·ρ ⊙ w, ρ = 1/√(mean(out²) + ε): dout = ρ·(w ⊙ dN) − "
    "out·ρ³·mean(out ⊙ w ⊙ dN). 기울기 중 행 자신의 방향 성분은 빠집니다: 정규화는 행 길이의 "
    "변화를 되돌립니다.",
    "stage.grad_norm.title": "역전파: 게이트 정규화 가중치의 기울기",
    "stage.grad_norm.why": "모든 헤드의 정규화한 출력에 같은 가중치 w(d_v개의 수)를 곱했으므로, "
    "그 기울기는 토큰들과 헤드들에 걸쳐 그 열의 dN에 out·ρ를 곱해 더한 것입니다.",
    "stage.gdn_grad_conv.title": "인과 합성곱과 SiLU를 거치는 역전파",
    "stage.gdn_grad_conv.why": "u = conv(Q)일 때 Q_c = SiLU(u)이므로 먼저 e = dQ_c ⊙ SiLU'(u)이고, "
    "SiLU'(u) = σ(u)·(1 + u·(1 − σ(u)))입니다. 탭 r은 Q의 행 s를 행 s + K − 1 − r로 옮겼으므로, "
    "행 s는 각 탭의 가중치에 그 탭이 닿은 행의 e를 곱해 돌려받습니다(마지막 행을 넘는 행은 "
    "아무것도 주지 않습니다).",
    "note.gdn_grad_conv": "각 칸: 그 열의 탭 {taps}개에 걸친 Σ_r w[r]·e[s + {taps} − 1 − r], "
    "e = 탭이 닿은 행의 d(…)_c ⊙ SiLU'(u).",
    "stage.gdn_grad_taps.title": "역전파: 합성곱 탭의 기울기",
    "stage.gdn_grad_taps.why": "한 열의 탭 r은 모든 토큰 t에서 그 열의 행 t − K + 1 + r을 "
    "곱했으므로, 그 기울기는 토큰들에 걸쳐 e_t(SiLU 앞의 기울기)에 그 행을 곱해 더한 것입니다. "
    "층의 커널(입력의 conv)에서 이 헤드의 열입니다.",
    "stage.gdn_grad_a.title": "역전파: 감쇠를 거치는 da",
    "stage.gdn_grad_a.why": "g = −e^(A_log)·softplus(a + dt_bias)이고 softplus'는 σ(torch처럼 "
    "20 위에서는 1)이므로 da = dg·(−e^(A_log))·σ(a + dt_bias)입니다.",
    "stage.gdn_grad_b.title": "역전파: σ를 거치는 db",
    "stage.gdn_grad_b.why": "β = σ(b)(OLMo-Hybrid에서는 2를 곱함)이고 σ' = σ·(1 − σ)이므로 db = "
    "dβ·σ(b)·(1 − σ(b))입니다(그 배율을 곱함).",
    "stage.gdn_grad_decay.title": "역전파: 이 헤드의 A_log와 dt_bias의 기울기",
    "stage.gdn_grad_decay.why": "g_t = −e^(A_log)·softplus(a_t + dt_bias)이므로 ∂g_t/∂A_log = "
    "g_t이고 dA_log = Σ_t dg_t·g_t입니다. dt_bias는 모든 a_t에 더해지므로 d(dt_bias) = "
    "Σ_t da_t입니다.",
    "stage.grad_wa.title": "W_a의 기울기",
    "stage.grad_wa.why": "a = X·W_a(입력의 wa)이므로 dW_a = Xᵀ·da이고, 각 헤드의 기울기는 자기 "
    "열에 놓입니다.",
    "stage.grad_wb.title": "W_b의 기울기",
    "stage.grad_wb.why": "b = X·W_b(입력의 wb)이므로 dW_b = Xᵀ·db이고, 각 헤드의 기울기는 자기 "
    "열에 놓입니다.",
    "stage.kda_grad_f.title": "역전파: 채널마다의 감쇠를 거치는 dF",
    "stage.kda_grad_f.why": "g[t, c] = −e^(A_log)·softplus(F[t, c] + dt_bias[c])이고 softplus'는 "
    "σ(torch처럼 20 위에서는 1)이므로 칸마다 dF = dg·(−e^(A_log))·σ(F + dt_bias)입니다. Ling 3.0의 "
    "제한된 감쇠 g = b·σ(e^(A_log)·(F + dt_bias))에서는 dF = dg·b·e^(A_log)·σ'(…), "
    "σ' = σ·(1 − σ)입니다.",
    "stage.kda_grad_b.title": "역전파: σ를 거치는 db",
    "stage.kda_grad_b.why": "β = σ(b)이고 σ' = σ·(1 − σ)이므로 db = dβ·σ(b)·(1 − σ(b))입니다.",
    "stage.kda_grad_decay.title": "역전파: 이 헤드의 A_log와 dt_bias의 기울기",
    "stage.kda_grad_decay.why": "A_log(헤드마다 하나)는 모든 채널의 감쇠를 정하므로 dA_log는 "
    "토큰들과 채널들에 걸쳐 dg·∂g/∂A_log를 더한 것입니다(∂g/∂A_log는 g 자신이고, 제한된 감쇠에서는 "
    "b·σ'(…)·e^(A_log)·(F + dt_bias)). dt_bias[c]는 F의 열 c에 더해지므로 d(dt_bias)[c]는 토큰들에 "
    "걸쳐 dF의 열 c를 더한 것입니다.",
    "stage.grad_wfa.title": "W_fa의 기울기",
    "stage.grad_wfa.why": "F_a = X·W_fa(입력의 wf_a)는 한 번 만들어 모든 헤드가 읽으므로 "
    "dW_fa = Xᵀ·dF_a입니다.",
    "stage.grad_wfb.title": "W_fb의 기울기",
    "stage.grad_wfb.why": "F = F_a·W_fb(입력의 wf_b)이므로 dW_fb = F_aᵀ·dF이고, 각 헤드의 기울기는 "
    "자기 열에 놓입니다.",
    "stage.grad_wf.title": "W_f의 기울기",
    "stage.grad_wf.why": "F = X·W_f(입력의 wf)이므로 dW_f = Xᵀ·dF이고, 각 헤드의 기울기는 자기 "
    "열에 놓입니다.",
    "stage.grad_wga.title": "W_ga의 기울기",
    "stage.grad_wga.why": "G_a = X·W_ga(입력의 wg_a)는 한 번 만들어 모든 헤드가 읽으므로 "
    "dW_ga = Xᵀ·dG_a입니다.",
    "stage.grad_wgb.title": "W_gb의 기울기",
    "stage.grad_wgb.why": "Z = G_a·W_gb(입력의 wg_b)이므로 dW_gb = G_aᵀ·dZ이고, 각 헤드의 기울기는 "
    "자기 열에 놓입니다.",
    "stage.grad_f_a.title": "역전파: 저랭크 F_a의 기울기",
    "stage.grad_f_a.why": "모든 헤드의 F는 F_a에 W_fb의 자기 열을 곱한 것이므로, "
    "dF_a는 모든 헤드의 "
    "dF·W_fbᵀ를 더한 것입니다.",
    "stage.grad_g_a.title": "역전파: 저랭크 G_a의 기울기",
    "stage.grad_g_a.why": "모든 헤드의 Z는 G_a에 W_gb의 자기 열을 곱한 것이므로, "
    "dG_a는 모든 헤드의 "
    "dZ·W_gbᵀ를 더한 것입니다.",
    "stage.grad_wz.title": "W_z의 기울기",
    "stage.grad_wz.why": "Z = X·W_Z(입력의 wz)이므로 dW_Z = Xᵀ·dZ이고, 각 헤드의 기울기는 자기 "
    "열에 놓입니다. 각 가중치는 토큰들에 걸쳐 자기 입력값과 게이트 입력의 기울기의 곱을 모읍니다.",
    "note.lightning_silu": "silu(x) = x·σ(x) = x / (1 + e^(−x)), 칸마다 계산합니다.",
    "note.lightning_state": "S_0 = 0. 각 칸: e^(−λ)·S_(t−1)[i,j] + k_t[i]·v_t[j], 여기서 λ = "
    "{slope}, e^(−λ) ≈ {decay}.",
    "note.lightning_weights": "s ≤ t일 때 W[t,s] = e^(−λ·(t − s))·q_t·k_s, 행 t에서 토큰 s의 "
    "Value가 차지하는 몫입니다: k_s·v_sᵀ를 상태에 쓴 뒤, t까지 뒤에 오는 토큰마다 한 번씩 "
    "감쇠시키고 q_t로 읽은 값입니다. 대각선에서는 감쇠가 없습니다(t − s = 0).",
    "note.lightning_linear_in_v": "W·{v} 곱은 반올림 오차 안에서 이 출력과 같습니다: 가장 큰 "
    "차이는 {diff}. q와 k를 고정하면 층은 {v} 행렬에 대해 선형입니다(MiniMax의 정규화 앞까지; 그 "
    "정규화는 선형이 아닙니다).",
    "note.lightning_linear_in_v_far": "W·{v} 곱과 이 출력의 차이가 최대 {diff}입니다: 수가 너무 "
    "커서 float64가 둘을 같게 유지하지 못합니다.",
    "note.lightning_blocked_equal": "블록 형식도 반올림 오차 안에서 같은 출력을 냅니다: 가장 큰 "
    "차이는 {diff}.",
    "note.lightning_blocked_far": "블록 형식과 이 출력의 차이가 최대 {diff}입니다: 수가 너무 "
    "커서 float64가 두 형식을 같게 유지하지 못합니다.",
    "note.lightning_rms": "r = √(행의 수 {width}개의 제곱의 평균 + ε), ε = {eps}: 헤드들의 "
    "출력을 나란히 놓은 행입니다(H·d_v에 걸친 MiniMaxRMSNorm).",
    "note.exact_stops_silu": "여기부터는 정확한 분수가 없습니다: silu(x) = x / (1 + e^(−x))는 "
    "0이 아닌 모든 유리수 x에서 무리수입니다(그때 e^(−x)는 초월수입니다).",
    "note.exact_stops_lightning": "여기부터는 정확한 분수가 없습니다: 감쇠 e^(−λ)는 0이 아닌 "
    "모든 유리수 λ에서 무리수입니다(그때 초월수입니다).",
    "mistake.lightning_decay_missing": "이 값은 감쇠를 뺐습니다: 상태에 e^(−λ)를 한 번도 곱하지 "
    "않아서 앞선 토큰이 모두 가장 새 토큰만큼 셉니다. 각 토큰은 먼저 상태에 e^(−λ)를 곱한 뒤 "
    "k_t·v_tᵀ를 더합니다. W[t,s] = e^(−λ·(t − s))·q_t·k_s.",
    "mistake.lightning_decay_by_position": "이 값은 Query와의 거리 대신 Key의 위치로 "
    "감쇠시켰습니다: e^(−λ·(t − s)) 자리에 e^(−λ·s). 감쇠는 s와 t 사이의 토큰 수를 세므로, "
    "토큰 자신의 Key(s = t)는 전혀 감쇠하지 않습니다.",
    "lightning.not_object": 'lightning은 {{"slope": [...]}} 같은 객체여야 합니다. 받은 값: {value}',
    "lightning.unknown_key": "lightning에 없는 키입니다: {key}. 쓸 수 있는 키: {known}",
    "lightning.needs": "lightning에는 slope가 있어야 합니다: 헤드마다의 감쇠율 λ(토큰마다 "
    "상태에 e^(−λ)를 곱함), 헤드마다 수 하나씩.",
    "lightning.length": "lightning의 {field} 모양: {shape}. 필요한 수의 개수: {length}(slope: "
    "헤드마다 하나, norm: 헤드들을 나란히 놓은 열마다 하나, H·d_v).",
    "lightning.slope": "lightning의 slope는 0 이상의 수여야 합니다(감쇠 e^(−λ)는 1 이하). 받은 "
    "값: {value}",
    "lightning.block": "lightning의 block(블록 형식의 블록 크기)은 1 이상의 정수여야 합니다. "
    "받은 값: {value}",
    "lightning.act": 'lightning의 act는 "silu"이거나 빠져 있어야 합니다(활성화 없음). 받은 값: '
    "{value}",
    "lightning.norm_eps": "lightning의 norm_eps는 0보다 큰 수여야 합니다. 받은 값: {value}",
    "lightning.gate_needs_x": "lightning의 gate는 σ(X·W_G)를 곱하므로 x와 가중치가 있어야 "
    "합니다. q, k, v를 직접 주면 안 됩니다.",
    "lightning.gate_shape": "lightning의 gate 모양: {shape}. 필요한 모양: {want}(레이아웃 "
    '"{layout}"에서 d_model × H·d_v).',
    "lightning.mask": "라이트닝 어텐션 층은 본래 인과적입니다(각 토큰은 자기까지의 토큰이 쓴 "
    '상태를 읽습니다): mask를 "causal"(인과 마스크)로 주세요. 지금 마스크: {mask}("mask" '
    "키가 없는 문제는 none입니다)",
    "lightning.cross": "라이트닝 어텐션 층은 자기 토큰을 읽습니다: Q의 행 수는 {n}, K와 V의 행 "
    "수는 {m}입니다. 행 수가 같아야 합니다.",
    "lightning.kv_heads": "라이트닝 어텐션 문제에는 K/V 헤드가 헤드 수만큼 있어야 합니다(지금 "
    "heads = {heads}, kv_heads = {kv_heads}): kv_heads를 빼세요.",
    "lightning.scale": "라이트닝 어텐션 층은 Query를 스케일링하지 않습니다(스케일링할 스코어가 "
    "없습니다): scale을 빼세요.",
    "lightning.alone": "라이트닝 어텐션 층(lightning)에는 스코어도 소프트맥스도 없어서 어텐션의 "
    "다른 기능은 적용되지 않습니다: 그 기능들을 빼세요.",
    "lightning.decode": "라이트닝 어텐션 층(lightning)은 이미 상태를 거쳐 토큰 하나씩 "
    "계산합니다: --decode를 빼세요.",
    "lightning.tiles": "라이트닝 어텐션 층(lightning)에는 타일로 나눠 계산할 소프트맥스가 "
    "없습니다: --tiles를 빼세요.",
    # the layer around the core (qkvcalc/ops/gdn_layer.py)
    "ui.variant.gdn_conv": "Q, K, V가 층의 인과 합성곱(탭 {taps}개)과 SiLU를 거침",
    "ui.variant.gdn_gates": "X로 만든 g와 β(W_a, W_b, A_log, dt_bias)",
    "ui.variant.gdn_norm": "코어 다음의 게이트가 있는 RMSNorm: out / RMS(out) ⊙ w ⊙ SiLU(X·W_z)",
    "stage.gdn_conv.title": "Gated DeltaNet: 인과 합성곱, 그다음 SiLU",
    "stage.gdn_conv.why": "델타 규칙 전에 Q, K, V의 각 열을 바로 앞 몇 토큰의 같은 열과 섞습니다: "
    "열마다 커널이 하나인 깊이별 합성곱(groups = 채널 수인 conv1d)이고, 인과적이라 어떤 토큰도 "
    "뒤의 토큰을 보지 않습니다. 그다음 SiLU(x) = x·σ(x)를 적용합니다. 그래서 토큰의 Query, Key, "
    "Value는 상태를 읽거나 쓰기 전에 이미 이웃의 값을 조금 담고 있습니다.",
    "stage.gdn_a.title": "Gated DeltaNet: 감쇠를 정하는, 이 헤드의 토큰마다 한 수 a",
    "stage.gdn_a.why": "X를 투영한 열이 하나 더 있습니다. W_a에서 이 헤드의 열입니다. 이 토큰에서 "
    "상태가 얼마나 빨리 잊는지를 정합니다.",
    "stage.gdn_b.title": "Gated DeltaNet: β를 정하는, 이 헤드의 토큰마다 한 수 b",
    "stage.gdn_b.why": "X를 투영한 열이 하나 더 있습니다. W_b에서 이 헤드의 열입니다. 토큰이 "
    "얼마나 세게 쓰는지를 정합니다.",
    "stage.gdn_gates.title": "Gated DeltaNet: a와 b로 만든 감쇠 g와 쓰기 세기 β",
    "stage.gdn_gates.why": "g = −e^(A_log)·softplus(a + dt_bias)는 0보다 작으므로 감쇠 e^g는 "
    "(0, 1) 안에 있습니다: 토큰이 쓰기 전에 상태에 이 값을 곱합니다. β = σ(b)는 (0, 1) 안에 "
    "있습니다: 토큰이 보정을 얼마나 쓰는지입니다.",
    "stage.z.title": "Gated DeltaNet: 출력 게이트의 입력 Z",
    "stage.z.why": "X의 투영이 하나 더 있습니다. 이 헤드에 d_v개 열입니다: 아래에서 SiLU(Z)를 "
    "정규화한 출력에 칸마다 곱합니다.",
    "stage.gdn_normed.title": "Gated DeltaNet: 출력을 제곱평균제곱근으로 나누고 w를 곱함",
    "stage.gdn_normed.why": "코어 출력의 토큰마다 행을 그 제곱평균제곱근(√(mean(out²) + ε))으로 "
    "나누고, 열마다 정규화의 가중치 w를 곱합니다(Qwen3NextRMSNormGated: 1 + w가 아니라 저장된 "
    "w 그대로).",
    "stage.gdn_gated.title": "Gated DeltaNet: 정규화한 출력에 SiLU(Z)를 곱함",
    "stage.gdn_gated.why": "게이트입니다: 각 칸에 토큰이 X로 정하는 SiLU(Z) = Z·σ(Z)를 곱합니다. "
    "그다음 헤드들을 잇고 out_proj(W_O)가 섞습니다.",
    "stage.gdn_output_normed.title": "Gated DeltaNet: 상태에서 읽은 출력",
    "stage.gdn_output_normed.why": "각 토큰은 방금 쓴 상태를 자기 Query로 읽습니다: o_t = "
    "S_tᵀ·q̂_t. 이 코어 출력은 헤드들을 잇기 전에 아래의 게이트가 있는 RMSNorm(SiLU(Z)를 곱함)을 "
    "거칩니다.",
    "note.gdn_conv": "각 칸: 그 열의 탭 {taps}개에 걸친 SiLU(Σ_r w[r]·x[t − {back} + r]). 첫 "
    "토큰 앞의 행은 0입니다.",
    "note.gdn_gates": "이 헤드의 A_log = {a_log}, 그래서 e^(A_log) = {decay}.",
    "note.gdn_beta_scale": "여기서 β = {scale}·σ(b)는 (0, {scale}) 안에 있습니다(OLMo-Hybrid의 "
    "allow_neg_eigval): β가 1보다 크면 토큰이 보정보다 더 많이 쓰고, I − β·k̂·k̂ᵀ는 상태의 k̂ "
    "방향 성분의 부호를 뒤집습니다.",
    "note.gdn_norm_weight": "RMS(out) = √(행의 제곱의 평균 + ε), 토큰마다 행 전체에 수 하나입니다.",
    "gated_delta.both_gates": "gated_delta에 g나 beta가 있는데 다음 키도 있습니다: {made}. g와 "
    "beta를 주거나, 층이 그것을 만드는 wa, wb, a_log, dt_bias를 주세요. 둘 다는 안 됩니다.",
    "gated_delta.made_needs": "gated_delta는 wa, wb, a_log, dt_bias가 모두 있어야 X로 g와 β를 "
    "만듭니다. 빠진 키: {missing}",
    "gated_delta.needs_x": "gated_delta의 {field} 키는 X에 곱합니다: q, k, v를 직접 주지 말고 x와 "
    "가중치를 주세요.",
    "gated_delta.conv": "gated_delta의 conv 모양은 {shape}인데, 탭마다 한 행, q, k, v의 채널마다 "
    "한 열이 필요합니다: K × (2·H·d_k + H·d_v) = K × {channels} (H = {heads}, d_k = {d_k}, "
    "d_v = {d_v}).",
    "gated_delta.weight_shape": "gated_delta의 {field} 키의 모양은 {shape}인데, 필요한 모양은 "
    "{want}입니다(W_Q와 같은 {layout} 레이아웃).",
    "gated_delta.vector": "gated_delta의 {field} 키에 수가 {length}개 있는데, {want}개가 "
    "필요합니다: 헤드마다 하나(a_log, dt_bias) 또는 헤드 출력의 열마다 하나(norm).",
    "gated_delta.norm_pair": "gated_delta의 게이트가 있는 정규화에는 wz(게이트의 가중치)와 "
    "norm(가중치 w)이 함께 필요하고, norm_eps는 그 둘과 함께만 씁니다. 혼자 온 키: {given}",
    "gated_delta.beta_scale": "gated_delta의 beta_scale은 X로 만든 β에 곱합니다(β = "
    "beta_scale·σ(b), OLMo-Hybrid에서는 2): wa, wb, a_log, dt_bias와 함께, 0보다 크고 2 이하인 "
    "수로 주세요(2를 넘으면 I − β·k̂·k̂ᵀ가 상태를 키웁니다). 받은 값: {value}",
    "gated_delta.norm_eps": "gated_delta의 norm_eps(게이트가 있는 정규화의 ε)는 0과 1 사이의 "
    "수여야 합니다. 받은 값: {value}",
    # ---- differential attention (qkvcalc/ops/differential.py) ----
    "ui.variant.differential": "헤드 쌍의 차분 어텐션, λ = {lam}, λ_init = {init}",
    "stage.diff_weights.title": "차분 어텐션: 한 맵에서 λ배 한 다른 맵을 뺌",
    "stage.diff_weights.why": "헤드들은 쌍으로 일합니다. 헤드 i와 헤드 i + H/2는 각자의 Query와 "
    "Key로 같은 토큰들을 보고, 첫 번째 맵에서 두 번째 맵에 λ를 곱한 값을 뺍니다. 두 맵이 같은 "
    "Key에 주는 어텐션(소프트맥스가 0으로 만들 수 없는 잡음)은 두 번째 맵의 가중치에 λ를 곱한 값이 "
    "첫 번째 맵의 가중치와 같아지는 만큼 상쇄되고, 첫 번째 맵만 보는 것이 남습니다. 각 맵의 행은 "
    "합이 1이므로 Δ의 행은 합이 1 − λ이고(모든 Key가 마스킹된 행은 0), λ > 0이면 Δ의 칸이 음수일 "
    "수 있습니다.",
    "stage.diff_v.title": "차분 어텐션: 쌍의 Value를 나란히",
    "stage.diff_v.why": "쌍은 두 헤드의 Value를 한 번에, 두 배 넓은 행렬 하나로 읽습니다. 그래서 "
    "쌍의 출력은 2·d_v개의 열을 가지고, H/2개의 쌍을 합치면 H개의 헤드와 같은 너비가 됩니다. "
    "W_O의 모양은 그대로입니다.",
    "stage.diff_output.title": "차분 어텐션: 차이를 Value에 적용",
    "stage.diff_output.why": "헤드 출력과 같은 가중합이되, 맵의 차이를 가중치로 씁니다: "
    "D = Δ·V''. 위에서 계산한 각 헤드의 출력 A·V는 여기부터 쓰이지 않고, 쌍의 출력이 그 "
    "자리를 대신합니다.",
    "stage.diff_norm.title": "차분 어텐션: 그룹 정규화",
    "stage.diff_norm.why": "쌍의 출력의 각 행을 그 행의 제곱평균제곱근으로 나눕니다(쌍의 2·d_v개 "
    "열에 걸친, 가중치 없는 RMSNorm). 한 맵에서 다른 맵을 빼면 D의 행이 어떤 토큰에서는 크고 다음 "
    "토큰에서는 작을 수 있으므로(두 맵이 거의 상쇄되는 곳), 정규화가 모든 행의 제곱평균제곱근을 "
    "1보다 조금 작은 값으로 맞춥니다(행이 ε에 비해 아주 작으면 그렇지 않고, 0뿐인 행은 0으로 "
    "남습니다).",
    "stage.diff_scaled.title": "차분 어텐션: 1 − λ_init를 곱함",
    "stage.diff_scaled.why": "정규화한 행의 모든 칸에 같은 수 1 − λ_init를 곱합니다. Ye et al.은 "
    "이 고정된 배율로, 쌍을 거슬러 흐르는 기울기를 보통 Transformer의 어텐션을 거슬러 흐르는 "
    "기울기와 비슷한 크기로 유지합니다. 이어 붙이기는 쌍마다 하나씩인 이 출력을 읽습니다.",
    "note.diff_pair": "헤드 {i}의 짝: 헤드 {j}. Δ = A_{i} − {lam} × A_{j}.",
    "note.diff_v": "헤드 {i}의 Value: 열 {first}. 헤드 {j}의 Value: 열 {second}.",
    "note.diff_norm": "행마다: {width}개 열에 걸쳐 x / √(mean(x²) + ε), ε = {eps}.",
    "note.diff_scaled": "λ_init = {init}이므로 모든 칸에 곱하는 값은 1 − λ_init = {factor}입니다.",
    "hint.diff_weights": "{cell} = A_{head}[{i},{j}] − λ × A_{partner}[{i},{j}]: 헤드 {head}의 "
    "가중치에서 λ배 한 헤드 {partner}의 가중치를 뺍니다.",
    "hint.diff_v": "{cell}: 헤드 {head}의 Value(처음 d_v개 열)나 헤드 {partner}의 Value(나머지 "
    "열)의 한 칸입니다.",
    "hint.diff_norm": "{cell} = D[{i},{j}] / √(D의 {i}행 제곱의 평균 + ε).",
    "hint.diff_scaled": "{cell} = (1 − λ_init) × N[{i},{j}].",
    "mistake.diff_lambda_missing": "이 값은 한 맵에서 다른 맵을 λ 없이 뺀 것입니다. 두 번째 맵은 "
    "빼기 전에 λ를 곱해야 합니다.",
    "mistake.diff_added": "이 값은 두 번째 맵의 λ배를 더했습니다. 차분 어텐션은 그것을 뺍니다.",
    "stage.grad_back.diff_scale.title": "상수 곱을 거슬러 역전파",
    "stage.grad_back.diff_scale.why": "모든 칸에 같은 수를 곱했으므로, 모든 칸의 기울기에도 그 "
    "수를 곱합니다.",
    "stage.grad_back.group_rms.title": "그룹 정규화를 거슬러 역전파",
    "stage.grad_back.group_rms.why": "정규화는 각 행에 ρ = 1/√(mean(x²) + ε)를 곱했습니다. 그 "
    "역전파는 두 부분입니다: 기울기에 같은 비율을 곱한 ρ·g에서, 행의 길이만 바꾸는 부분(정규화가 "
    "상쇄하는 부분)을 뺍니다.",
    "stage.grad_diff_v.title": "역전파: 쌍의 Value의 기울기",
    "stage.grad_diff_v.why": "D = Δ·V''이므로 헤드의 Value와 마찬가지로 dV'' = Δᵀ·dD입니다. 각 "
    "Value 행은 자기를 읽은 Query들의 출력 기울기를 Δ로 가중해 모읍니다(음수 가중치는 반대 "
    "방향으로 밉니다).",
    "stage.grad_diff_weights.title": "역전파: 맵의 차이의 기울기",
    "stage.grad_diff_weights.why": "D = Δ·V''이므로 dΔ = dD·V''ᵀ입니다: 출력 행 i의 기울기와 "
    "Value 행 j의 내적입니다.",
    "stage.grad_weights.diff_first.title": "역전파: 첫 번째 맵의 기울기",
    "stage.grad_weights.diff_first.why": "Δ = A_first − λ·A_second이므로 첫 번째 맵의 기울기는 "
    "dΔ 그대로입니다.",
    "stage.grad_weights.diff_second.title": "역전파: 두 번째 맵의 기울기",
    "stage.grad_weights.diff_second.why": "Δ = A_first − λ·A_second이므로 두 번째 맵의 기울기는 "
    "−λ·dΔ입니다: λ > 0이면 그 가중치를 올릴 때 Δ가 내려갑니다.",
    "stage.grad_v.diff.title": "역전파: 쌍의 Value 중 한 헤드의 몫",
    "stage.grad_v.diff.why": "V''는 두 헤드의 Value를 나란히 놓았으므로, 각 헤드의 V는 dV''에서 "
    "자기 열을 돌려받습니다.",
    "differential.not_object": "differential은 "
    '{{"lambda": 0.5, "lambda_init": 0.2}} 같은 객체여야 합니다. 주어진 값: {value}',
    "differential.unknown_key": "differential에 없는 키: {key}. 쓸 수 있는 키: {known}",
    "differential.needs_both": "differential에는 lambda(λ)와 lambda_init(λ_init)가 모두 "
    "필요합니다.",
    "differential.heads_odd": "차분 어텐션은 헤드 i를 헤드 i + H/2와 짝지으므로 헤드 수가 짝수여야 "
    "합니다. 주어진 헤드 수: {heads}.",
    "differential.with_gate": "차분 어텐션은 짝지은 헤드들의 출력을 합치는데, 출력 게이트(wg)는 "
    "바로 그 자리에서 각 헤드의 출력에 곱해집니다. qkvcalc는 둘을 함께 계산하지 않습니다"
    "(DiffLlama에는 출력 게이트가 없습니다). wg와 bg를 빼거나 differential을 빼세요.",
    "differential.decode": "차분 어텐션은 KV 캐시로 한 단계씩 계산하지 않습니다: --decode를 "
    "빼세요(전체 실행에서 보입니다).",
    "differential.train": "train은 아직 차분 어텐션을 거쳐 학습하지 않습니다: 학습하려면 "
    "differential을 빼거나, 그 기울기는 explain --backward로 보세요.",
    "differential.tiles": "차분 어텐션은 가중치 맵 전체를 빼는데, 타일 실행은 맵 전체를 갖고 "
    "있지 않습니다: --tiles를 빼세요.",
    "stage.concat.pairs.title": "쌍들을 이어 붙이기",
    "stage.concat.pairs.why": "쌍마다 배율을 곱한 출력을 나란히 놓습니다. 쌍 1의 열이 먼저 오고, "
    "2·d_v개 열의 쌍 H/2개가 토큰마다 한 행, 너비 H·d_v를 이룹니다.",
    "note.concat_columns_pairs": "이어 붙인 결과의 열, 쌍별로: {spans}.",
    "ui.concat_span_pair": "쌍 {head} → {cols}",
    "hint.concat_pairs": "{cell}: 쌍 {h}의 배율을 곱한 출력의 {i}번째 행, {c}번째 열입니다. "
    "쌍들을 나란히 이어 붙입니다.",
    "stage.grad_output.pair.title": "역전파: 이 쌍의 기울기 몫",
    "stage.grad_output.pair.why": "각 쌍은 이어 붙인 행렬의 자기 열을 썼으므로, 각 쌍은 "
    "d(concat)에서 정확히 그 열만 돌려받고 다른 쌍의 것은 받지 않습니다.",
    "stage.output.final_pairs.title": "출력 선형 투영",
    "stage.output.final_pairs.why": "W_O 덕분에 출력의 각 성분이 이어 붙인 쌍들의 모든 열을 함께 "
    "쓸 수 있습니다: concat·W_O = Σ_i pair_i·W_O[쌍 i의 행들]이므로, 쌍이 둘 이상이면 한 쌍이 찾은 "
    "것과 다른 쌍들이 찾은 것이 섞입니다. 출력의 폭도 W_O가 정합니다. 보통 d_model로 돌아가서, "
    "층의 입력에 결과를 더하는 잔차 연결(residual connection)에 맞춥니다.",
    "stage.output.concat_pairs.title": "출력 (이어 붙인 쌍)",
    "stage.output.concat_pairs.why": "W_O가 주어지지 않았으므로, 이어 붙인 쌍이 그대로 출력입니다.",
    "ui.variant.chunk": "청크 크기 {chunk}",
    "ui.variant.window": "슬라이딩 윈도우 {window}",
    "ui.variant.bottom_right": "오른쪽 아래에 맞춘 인과 마스크",
    "ui.variant.positions": "주어진 위치",
    "ui.mask_none": "없음",
    "ui.mask_causal": "인과 마스크(causal)",
    "ui.mask_custom": "직접 준 0/1 행렬",
    "ui.mask_padding": "{mask} + 패딩 마스크(key_padding)",
    "ui.preset_reference": "숫자의 출처: {reference}",
    "ui.worksheet": "워크시트: 입력은 채워져 있습니다. 빈칸을 모두 계산해 채우세요. 답은 같은 "
    "명령을 --worksheet 없이 실행하면 나옵니다.",
    "ui.preset": "프리셋 {name}: {description}",
    "ui.preset_bare": "프리셋 {name}",
    "ui.edited_from": "프리셋을 고친 문제(원래 프리셋: {name}): 숫자나 옵션이 더 이상 프리셋의 "
    "것이 아니므로 프리셋의 설명과 출처는 싣지 않습니다",
    "ui.named": "{name}: {description}",
    "ui.named_bare": "{name}",
    "ui.presets_title": "프리셋",
    "ui.presets_name": "이름",
    "ui.presets_description": "설명",
    "ui.presets_hint": "실행: qkvcalc explain --preset NAME · 고쳐 쓰기: "
    "qkvcalc presets show NAME > mine.json",
    "ui.split_row": "헤드 {head}: {q}[:, {qcols}], {k}[:, {kcols}], {v}[:, {vcols}] (K/V 헤드 {g})",
    # ---- Kimi Delta Attention, a linear-attention layer (qkvcalc/ops/kimi_delta.py) ----
    "ui.variant.kimi_delta": "선형 어텐션 층: Kimi Delta Attention(Kimi Linear), Key 채널마다 "
    "감쇠 하나, 청크 형식의 청크 크기 {chunk}",
    "stage.kda_q_l2.title": "Kimi Delta Attention: L2 정규화하고 스케일링한 Query",
    "stage.kda_q_l2.why": "층은 Query의 각 행을 그 길이(√(Σx² + 10⁻⁶), 그래서 0으로 된 행은 "
    "그대로 0)로 나눈 뒤 √d_k로 다시 나눕니다(문제에 scale이 주어지면 √d_k로 나누는 대신 그 "
    "값을 곱합니다). transformers의 recurrent_kimi_delta_attention이 "
    "use_qk_l2norm_in_kernel로 하는 계산과 같습니다. 그러면 투영의 크기와 상관없이 모든 Query가 "
    "같은 세기로 상태를 읽습니다.",
    "stage.kda_k_l2.title": "Kimi Delta Attention: L2 정규화한 Key",
    "stage.kda_k_l2.why": "Key의 각 행을 그 길이로 나눕니다. 아래의 델타 규칙은 β·(v − S'ᵀk̂)를 "
    "k̂ 방향으로 쓰는데, |k̂| = 1이면 β = 1일 때 상태가 그 Key에 대해 갖고 있던 것을 정확히 바꿔 "
    "씁니다.",
    "stage.kda_gates.title": "Kimi Delta Attention: 토큰마다의 감쇠 g(Key 채널마다 하나)와 쓰기 "
    "세기 β",
    "stage.kda_gates.why": "토큰마다, 헤드마다 주어집니다: d_k개의 수 g_1 … g_d_k와 β 하나. "
    "각 g는 로그 공간의 감쇠입니다: 토큰이 쓰기 전에 상태의 c행(Key 채널 c)에 e^(g_c)를 "
    "곱하므로, 채널마다 자기 속도로 잊습니다(Gated DeltaNet은 모든 채널에 g 하나). Kimi Linear는 "
    "g = −e^(A_log)·softplus(f_b(f_a(x)) + dt_bias)로 계산하므로 각 e^g는 (0, 1) 안에 있고, "
    "β = σ(b)입니다.",
    "stage.kda_state.title": "Kimi Delta Attention: 이 토큰 다음의 상태",
    "stage.kda_state.why": "상태 S(d_k × d_v)는 토큰이 몇 개였든 층이 지금까지의 토큰에서 "
    "간직하는 전부입니다. 토큰마다 상태를 행별로 감쇠시키고(S' = Diag(e^g)·S: c행에 e^(g_c)를 "
    "곱함), 자기 Key에 대해 상태가 이미 가진 것을 읽고(m = S'ᵀ·k̂), 자기 Value와의 차이를 자기 "
    "Key 방향으로 씁니다: S = S' + k̂·(β·(v − m))ᵀ. 이것이 델타 규칙입니다: 기억에 더하지 않고 "
    "기억을 고칩니다.",
    "stage.kda_weights.title": "Kimi Delta Attention: 만들지 않고 계산하는 어텐션 행렬",
    "stage.kda_weights.why": "q, k, g, β를 고정하면 출력의 각 행은 그 토큰까지의 Value 행들의 "
    "가중합입니다. 이 표가 그 가중치입니다(Query마다 한 행, 하삼각: 층은 인과적입니다). 층은 이 "
    "n×n 행렬을 만들지 않고 d_k × d_v 상태만 만듭니다. 행의 합이 1일 필요가 없고 음수일 수도 "
    "있으며, 토큰의 가중치는 그 Key와 Query가 함께 쓰는 채널들의 감쇠와, 비슷한 Key 방향으로 "
    "나중에 쓰는 모든 쓰기 때문에 줄어듭니다.",
    "stage.kda_chunked.title": "Kimi Delta Attention: 청크 형식",
    "stage.kda_chunked.why": "층이 시퀀스 전체에 실제로 쓰는 "
    "계산입니다(chunk_kimi_delta_attention): 청크 안에서는 델타 규칙의 갱신들을, 항이 채널마다 "
    "감쇠하는 단위 하삼각 연립방정식 하나로 한꺼번에 풀고, 상태를 청크에서 청크로 넘깁니다. "
    "토큰마다 한 단계씩보다 더 적고 더 큰 행렬곱으로 같은 출력을 냅니다.",
    "stage.kda_output.title": "Kimi Delta Attention: 상태에서 읽은 출력",
    "stage.kda_output.why": "각 토큰은 방금 쓴 상태를 자기 Query로 읽습니다: o_t = S_tᵀ·q̂_t. "
    "Kimi Linear에서는 이 출력이 게이트가 있는 RMSNorm(o_norm, 저랭크 게이트 g_b(g_a(x))의 σ를 "
    "곱함)과 o_proj를 더 거치는데, 여기서는 보여 주지 않습니다.",
    "note.kda_l2norm": "l2norm(x) = x / √(Σx² + 10⁻⁶), 행마다 계산합니다: eps = 1e-6인 Kimi "
    "Linear의 l2norm과 같고, FLA 커널처럼 제곱근으로 나눕니다.",
    "note.kda_state": "S_0 = 0. 각 칸: e^(g_t[i])·S_{{t−1}}[i,j] + k̂_t[i]·β_t·(v_t[j] − "
    "m_t[j]). 여기서 m_t[j] = Σ_r e^(g_t[r])·S_{{t−1}}[r,j]·k̂_t[r]는 감쇠한 상태가 j열에서 이 "
    "Key에 대해 가진 값입니다. i행은 자기 채널의 g_t[i]로 감쇠합니다.",
    "note.kda_weights": "W[t,s] = β_s·k̂_sᵀ·A_(s+1)⋯A_t·q̂_t, A_r = Diag(e^(g_r))·(I − "
    "β_r·k̂_r·k̂_rᵀ): 토큰 s가 쓴 것을 t까지의 모든 단계를 거쳐 옮긴 뒤 q̂_t로 읽은 값입니다.",
    "note.kda_weights_work": "각 칸의 계산 과정은 행을 대각선에서 왼쪽으로 따라갑니다: "
    "W[t,s] = β_s·(s+1…t 구간의 ⟨k̂_s, q̂_t⟩ − Σ_(r = s+1…t) W[t,r]·s+1…r 구간의 ⟨k̂_s, k̂_r⟩). "
    "여기서 토큰 구간의 ⟨a, b⟩ = Σ_c e^(구간의 g_c 합)·a[c]·b[c]는 채널마다 자기 g로 감쇠시킨 "
    "내적입니다(대각선에서는 구간이 비어 있어 보통의 내적). 각 줄은 β_s × (감쇠한 ⟨k̂_s, q̂_t⟩ − "
    "뒤의 r마다 W[t,r] × 감쇠한 ⟨k̂_s, k̂_r⟩)이고, 대각선에서는 β_t × k̂_t·q̂_t입니다: 내적은 위의 "
    "Q̂, K̂, g로 계산하고, 가중치 W[t,r]는 같은 행의 오른쪽 칸입니다.",
    "note.kda_linear_in_v": "W·V는 반올림 오차 안에서 이 출력과 같습니다: 가장 큰 차이는 {diff}. "
    "q, k, g, β를 고정하면 층은 V에 대해 선형입니다(Kimi Linear의 게이트가 있는 정규화 앞까지; "
    "그 정규화는 선형이 아닙니다).",
    "note.kda_linear_in_v_far": "W·V와 이 출력의 차이가 최대 {diff}입니다: 수가 너무 커서 "
    "float64가 둘을 같게 유지하지 못합니다.",
    "note.kda_chunked_equal": "청크 형식도 반올림 오차 안에서 같은 출력을 냅니다: 가장 큰 차이는 "
    "{diff}.",
    "note.kda_chunked_far": "청크 형식과 이 출력의 차이가 최대 {diff}입니다: 감쇠가 너무 "
    "극단적이어서 float64가 두 형식을 같게 유지하지 못합니다.",
    "mistake.kda_decay_scalar": "이 값은 Gated DeltaNet의 헤드당 감쇠 하나처럼, 상태의 모든 "
    "행을 토큰마다 수 하나, e^(채널들에 대한 g_t의 평균)으로 감쇠시켰습니다. Kimi Delta "
    "Attention은 상태의 c행을 자기 채널의 e^(g_t[c])로 감쇠시킵니다: S' = "
    "Diag(e^(g_t))·S_(t−1).",
    "kimi_delta.not_object": 'kimi_delta는 {{"g": [...], "beta": [...]}} 같은 객체여야 '
    "합니다. 받은 값: {value}",
    "kimi_delta.unknown_key": "kimi_delta에 없는 키입니다: {key}. 쓸 수 있는 키: {known}",
    "kimi_delta.needs": "kimi_delta에는 g(토큰마다 로그 공간의 감쇠, Key 채널마다 하나)와 "
    "beta(β, 쓰기 세기, 토큰과 헤드마다 하나)가 둘 다 있거나, 층이 그것을 만드는 wf_a와 "
    "wf_b(또는 wf 하나), a_log, dt_bias, wb가 있어야 합니다.",
    "kimi_delta.g_shape": "kimi_delta의 g의 모양은 {shape}인데, 토큰, 헤드, Key 채널마다 감쇠가 "
    "하나씩 필요합니다: n×H×d_k = {n}×{heads}×{d_k}, 또는 헤드 1의 채널을 먼저 둔 n×(H·d_k) = "
    "{n}×{width}.",
    "kimi_delta.g_token": "kimi_delta의 g에서 토큰 {token}의 행렬 모양은 {shape}인데, 토큰마다 "
    "헤드당 한 행, Key 채널당 한 열이 필요합니다: H×d_k = {heads}×{d_k}.",
    "kimi_delta.beta_shape": "kimi_delta의 beta의 모양은 {shape}인데, 토큰마다 한 행, 헤드마다 "
    "한 열이 필요합니다: n×H = {n}×{heads}.",
    "kimi_delta.beta_flat": "kimi_delta의 beta에 수 {count}개의 1차원 목록이 주어졌는데, 토큰마다, "
    "헤드마다 수가 하나씩 필요합니다: n×H = {n}×{heads}(수 n개의 1차원 목록은 헤드가 하나일 때만 "
    "됩니다).",
    "kimi_delta.g_flat": "kimi_delta의 g에 수 {count}개의 1차원 목록이 주어졌는데, 토큰, 헤드, Key "
    "채널마다 감쇠가 하나씩 필요합니다: n×H×d_k = {n}×{heads}×{d_k}, 또는 헤드 1의 채널을 먼저 둔 "
    "n×(H·d_k) = {n}×{width}(수 n개의 1차원 목록은 헤드가 하나이고 d_k = 1일 때만 됩니다).",
    "kimi_delta.g_positive": "kimi_delta의 g가 토큰 {token}, 헤드 {head}, 채널 {channel}에서 "
    "0보다 큽니다: g는 로그 공간의 감쇠이고, 상태의 행에는 e^g ≤ 1을 곱합니다(Kimi Linear는 "
    "g = −e^(A_log)·softplus(f_b(f_a(x)) + dt_bias) < 0으로 만듭니다).",
    "kimi_delta.mask": "Kimi Delta Attention 층은 본래 인과적입니다(각 토큰은 자기까지의 토큰이 "
    '쓴 상태를 읽습니다): mask를 "causal"(인과 마스크)로 주세요. 지금 마스크: {mask}("mask" '
    "키가 없는 문제는 none입니다)",
    "kimi_delta.cross": "Kimi Delta Attention 층은 자기 토큰을 읽습니다: Q의 행 수는 {n}, K와 "
    "V의 행 수는 {m}입니다. 행 수가 같아야 합니다.",
    "kimi_delta.kv_heads": "Kimi Delta Attention 문제에는 K/V 헤드가 헤드 수만큼 있어야 "
    "합니다(지금 heads = {heads}, kv_heads = {kv_heads}): kv_heads를 빼세요.",
    "kimi_delta.chunk": "kimi_delta의 chunk(청크 형식의 청크 크기)는 1 이상의 정수여야 합니다. "
    "받은 값: {value}",
    "kimi_delta.alone": "Kimi Delta Attention 층(kimi_delta)에는 스코어도 소프트맥스도 없어서 "
    "어텐션의 다른 기능은 적용되지 않습니다. 빼야 할 기능: {others}.",
    "kimi_delta.decode": "Kimi Delta Attention 층(kimi_delta)은 이미 상태를 거쳐 토큰 하나씩 "
    "계산합니다: --decode를 빼세요.",
    "kimi_delta.tiles": "Kimi Delta Attention 층(kimi_delta)에는 타일로 나눠 계산할 "
    "소프트맥스가 없습니다: --tiles를 빼세요.",
    # the layer around the core (qkvcalc/ops/kda_layer.py; the convolution and the gated norm
    # are gdn_layer.py's)
    "ui.variant.kda_gates": "X로 만든 채널마다의 g와 β(W_fa, W_fb, A_log, dt_bias, W_b)",
    "ui.variant.kda_norm": "코어 다음의 게이트가 있는 RMSNorm: out / RMS(out) ⊙ w ⊙ σ(X·W_ga·W_gb)",
    "ui.variant.kda_gates_whole": "X로 만든 채널마다의 g와 β(W_f, A_log, dt_bias, W_b)",
    "ui.variant.kda_bounded": "하한이 있는 감쇠: g = {bound}·σ(e^(A_log)·(F + dt_bias)), 범위 "
    "({bound}, 0)",
    "ui.variant.kda_norm_whole": "코어 다음의 게이트가 있는 RMSNorm: out / RMS(out) ⊙ w ⊙ σ(X·W_z)",
    "stage.kda_conv.title": "Kimi Delta Attention: 인과 합성곱, 그다음 SiLU",
    "stage.kda_conv.why": "델타 규칙 전에 Q, K, V의 각 열을 바로 앞 몇 토큰의 같은 열과 섞습니다: "
    "열마다 커널이 하나인 깊이별 합성곱(groups = 채널 수인 conv1d)이고, 인과적이라 어떤 토큰도 "
    "뒤의 토큰을 보지 않습니다. 그다음 SiLU(x) = x·σ(x)를 적용합니다(Kimi Linear의 짧은 합성곱은 "
    "Gated DeltaNet의 것과 같습니다).",
    "stage.kda_f_a.title": "Kimi Delta Attention: 감쇠를 위한 X의 저랭크 투영 F_a",
    "stage.kda_f_a.why": "감쇠는 두 단계로 만듭니다(f_a_proj, 그다음 f_b_proj): X를 먼저 토큰마다 "
    "r개 수로 줄이고, 모든 헤드가 이것을 함께 씁니다. 얇은 행렬 두 개는 d_model × H·d_k 행렬 "
    "하나보다 수가 적습니다.",
    "stage.kda_f.title": "Kimi Delta Attention: 감쇠 전의 이 헤드의 토큰마다 d_k개 수 F",
    "stage.kda_f.why": "저랭크 F_a에 W_fb(f_b_proj)에서 이 헤드의 d_k개 열을 곱합니다: Key "
    "채널마다 수 하나이고, 여기서 채널마다의 감쇠를 만듭니다.",
    "stage.kda_f_whole.title": "Kimi Delta Attention: 감쇠 전의 이 헤드의 토큰마다 d_k개 수 F",
    "stage.kda_f_whole.why": "X에 W_f(f_proj: 저랭크 행렬 두 개가 아니라 d_model × H·d_k 행렬 "
    "하나)에서 이 헤드의 d_k개 열을 곱합니다: Key 채널마다 수 하나이고, 여기서 채널마다의 감쇠를 "
    "만듭니다.",
    "stage.kda_b.title": "Kimi Delta Attention: β를 위한 이 헤드의 토큰마다 수 b",
    "stage.kda_b.why": "X의 투영(b_proj)의 열이 헤드마다 하나 더 있습니다: σ를 적용하기 전의, "
    "토큰이 얼마나 세게 쓰는지입니다.",
    "stage.kda_gates_made.title": "Kimi Delta Attention: F와 b로 만든 감쇠 g(Key 채널마다 "
    "하나)와 쓰기 세기 β",
    "stage.kda_gates_made.why": "g_c = −e^(A_log)·softplus(F_c + dt_bias_c)는 0보다 작으므로 "
    "채널마다의 감쇠 e^(g_c)는 (0, 1) 안에 있습니다: 토큰이 쓰기 전에 상태의 c행에 이 값을 "
    "곱하고, 채널마다 잊는 속도가 다릅니다(A_log는 헤드마다 하나, dt_bias는 채널마다 하나). "
    "β = σ(b)는 (0, 1) 안에 있습니다: 토큰이 보정을 얼마나 쓰는지입니다.",
    "stage.kda_gates_bounded.title": "Kimi Delta Attention: F와 b로 만든 감쇠 g(Key 채널마다 "
    "하나)와 쓰기 세기 β",
    "stage.kda_gates_bounded.why": "g_c = b·σ(e^(A_log)·(F_c + dt_bias_c))이고 하한 b는 0보다 "
    "작습니다: σ는 (0, 1) 안에 있으므로 g_c는 (b, 0) 안에, 채널마다의 감쇠 e^(g_c)는 (e^b, 1) "
    "안에 있습니다. 하한이 없는 −e^(A_log)·softplus(…)와 달리 어떤 토큰도 한 번에 채널을 지울 수 "
    "없습니다(A_log는 헤드마다 하나, dt_bias는 채널마다 하나). β = σ(b)는 (0, 1) 안에 있습니다: "
    "토큰이 보정을 얼마나 쓰는지입니다.",
    "stage.kda_g_a.title": "Kimi Delta Attention: 출력 게이트를 위한 X의 저랭크 투영 G_a",
    "stage.kda_g_a.why": "출력 게이트도 두 단계로 만듭니다(g_a_proj, 그다음 g_b_proj): X를 "
    "토큰마다 r개 수로 줄이고, 모든 헤드가 이것을 함께 씁니다.",
    "stage.kda_z.title": "Kimi Delta Attention: 출력 게이트의 입력 Z",
    "stage.kda_z.why": "저랭크 G_a에 W_gb(g_b_proj)에서 이 헤드의 d_v개 열을 곱합니다: 아래에서 "
    "σ(Z)를 정규화한 출력에 칸마다 곱합니다.",
    "stage.kda_z_whole.title": "Kimi Delta Attention: 출력 게이트의 입력 Z",
    "stage.kda_z_whole.why": "X에 W_z(g_proj: 저랭크 행렬 두 개가 아니라 d_model × H·d_v 행렬 "
    "하나)에서 이 헤드의 d_v개 열을 곱합니다: 아래에서 σ(Z)를 정규화한 출력에 칸마다 곱합니다.",
    "stage.kda_normed.title": "Kimi Delta Attention: 출력을 제곱평균제곱근으로 나누고 w를 곱함",
    "stage.kda_normed.why": "코어 출력의 토큰마다 행을 그 제곱평균제곱근(√(mean(out²) + ε))으로 "
    "나누고, 열마다 정규화의 가중치 w를 곱합니다(KimiLinearRMSNormGated: 1 + w가 아니라 저장된 "
    "w 그대로).",
    "stage.kda_gated.title": "Kimi Delta Attention: 정규화한 출력에 σ(Z)를 곱함",
    "stage.kda_gated.why": "게이트입니다: 각 칸에 토큰이 X로 정하는 σ(Z)를 곱합니다(Kimi Linear의 "
    "게이트는 시그모이드이고, Gated DeltaNet의 게이트는 SiLU입니다). 그다음 헤드들을 잇고 "
    "o_proj(W_O)가 섞습니다.",
    "stage.kda_output_normed.title": "Kimi Delta Attention: 상태에서 읽은 출력",
    "stage.kda_output_normed.why": "각 토큰은 방금 쓴 상태를 자기 Query로 읽습니다: o_t = "
    "S_tᵀ·q̂_t. 이 코어 출력은 헤드들을 잇기 전에 아래의 게이트가 있는 RMSNorm(σ(Z)를 곱함)을 "
    "거칩니다.",
    "note.kda_gates_made": "이 헤드의 A_log = {a_log}, 그래서 e^(A_log) = {decay}.",
    "note.kda_gates_bounded": "이 헤드의 A_log = {a_log}, 그래서 e^(A_log) = {decay}. 하한은 "
    "b = {bound}.",
    "kimi_delta.both_gates": "kimi_delta에 g나 beta가 있는데 다음 키도 있습니다: {made}. g와 "
    "beta를 주거나, 층이 그것을 만드는 wf_a와 wf_b(또는 wf 하나), a_log, dt_bias, wb를 주세요. "
    "둘 다는 안 됩니다.",
    "kimi_delta.made_needs": "kimi_delta는 wf_a와 wf_b(또는 wf 하나), a_log, dt_bias, wb가 모두 "
    "있어야 X로 g와 β를 만들고, lower_bound는 그것들과 함께만 씁니다. 빠진 키: {missing}",
    "kimi_delta.both_forms": "kimi_delta에 {whole} 키가 있는데 다음 키도 있습니다: {parts}. "
    "투영을 하나로({whole}) 주거나 저랭크 인수 두 개로({parts}) 주세요. 둘 다는 안 됩니다.",
    "kimi_delta.lower_bound": "kimi_delta의 lower_bound(g = b·σ(e^(A_log)·(F + dt_bias))에서 "
    "하한이 있는 감쇠의 b)는 0보다 작은 수여야 합니다. 받은 값: {value}",
    "precision.kda_bounded": "--dtype은 하한이 있는 감쇠(lower_bound)를 Ling 3.0 모델이 계산하는 "
    "대로 반올림하는데, 그 망각 게이트는 투영이 하나(wf)입니다. wf_a와 wf_b로는 qkvcalc가 읽는 "
    "어떤 모델도 하한이 있는 감쇠를 만들지 않으므로 따를 모델의 반올림이 없습니다. 투영을 "
    "하나(wf)로 주거나 --dtype을 빼세요.",
    "kimi_delta.needs_x": "kimi_delta의 {field} 키는 X에 곱합니다: q, k, v를 직접 주지 말고 x와 "
    "가중치를 주세요.",
    "kimi_delta.conv": "kimi_delta의 conv 모양은 {shape}인데, 탭마다 한 행, q, k, v의 채널마다 "
    "한 열이 필요합니다: K × (2·H·d_k + H·d_v) = K × {channels} (H = {heads}, d_k = {d_k}, "
    "d_v = {d_v}).",
    "kimi_delta.weight_shape": "kimi_delta의 {field} 키의 모양은 {shape}인데, 필요한 모양은 "
    "{want}입니다(W_Q와 같은 {layout} 레이아웃. wf_b와 wg_b의 행 수는 wf_a와 wg_a의 열 수입니다).",
    "kimi_delta.vector": "kimi_delta의 {field} 키에 수가 {length}개 있는데, {want}개가 "
    "필요합니다: 헤드마다 하나(a_log), 각 헤드의 Key 채널마다 하나(dt_bias: H·d_k) 또는 헤드 "
    "출력의 열마다 하나(norm).",
    "kimi_delta.norm_needs": "kimi_delta의 게이트가 있는 정규화에는 wg_a와 wg_b(게이트의 두 "
    "가중치, 또는 하나로 된 게이트 가중치 wz)와 norm(가중치 w)이 함께 필요하고, norm_eps는 "
    "그것들과 함께만 씁니다. 받은 키: {given}. 빠진 키: {missing}",
    "kimi_delta.norm_eps": "kimi_delta의 norm_eps(게이트가 있는 정규화의 ε)는 0과 1 사이의 "
    "수여야 합니다. 받은 값: {value}",
    # ---- the bundled presets: descriptions (i18n.preset_description) and references -----
    "preset.alibi.description": "'I love my cats'에 ALiBi: 두 헤드가 먼 Key에 벌점을 "
    "줍니다. 하나는 가파르게(경사 1/2), 하나는 완만하게(1/4)",
    "preset.llama.description": "작은 LLaMA식 층: Query 헤드 2개가 K/V 헤드 1개를 함께 쓰고, "
    "q와 k에 RoPE, 인과 마스크, 그다음 W_O",
    "preset.rope.description": "'cat sat cat sat'에 RoPE: 같은 두 토큰이 같은 거리에 있으면 "
    "어디에 있든 스코어가 같습니다",
    "preset.tiles.description": "토큰 다섯 개에 FlashAttention의 온라인 소프트맥스, "
    "블록마다 Key 두 개: 블록 2에서 누적 최댓값이 커져 지금까지의 합과 출력이 e^(m_old − "
    "m_new)로 조정됩니다",
    "preset.decode.description": "KV 캐시로 'the cat sat down' 디코딩: 토큰 두 개를 prefill한 "
    "뒤 한 단계에 한 토큰씩, 캐시의 모든 Key에 주의를 기울입니다",
    "preset.window.description": "토큰 다섯 개에 크기 3의 슬라이딩 윈도우: Mistral의 층처럼 각 "
    "Query는 자기 자신과 앞의 두 토큰을 봅니다",
    "preset.cross.description": "크로스 어텐션: 프랑스어 'le chat dort'가 영어 'the cat is "
    "sleeping'을 읽습니다",
    "preset.doc.description": "토큰 하나, x = [1, 2]: Q, K, V를 손으로 계산해 보는 예제",
    "preset.dk64.description": "실제 모델 크기의 d_k = 64: 무작위 Query와 Key에서 √64 = 8로 "
    "나누면 Key 하나에 쏠렸던 가중치가 고루 퍼집니다",
    "preset.diff.description": "차분 어텐션: 헤드 2개가 한 쌍으로 (A_1 − λ·A_2)·[V_1 | V_2]를 "
    "계산하고, 각 행을 RMS로 정규화한 뒤 1 − λ_init를 곱합니다 (d_k = 1, 인과 마스크)",
    "preset.diff.reference": "qkvcalc용으로 만든 예제, Ye et al. 2024, 'Differential "
    "Transformer'(transformers의 DiffLlama)를 따름: 헤드 1과 헤드 2가 한 쌍이 되어, 첫 번째 맵에서 "
    "두 번째 맵에 λ = 1/2를 곱한 값을 뺍니다. 그래서 두 맵이 같은 Key에 주는 어텐션은 일부가 "
    "빠집니다(토큰 I: 두 맵 모두 가중치를 전부 I에 주고, Δ = 1 − ½·1 = ½). 그 결과로 두 헤드의 "
    "Value를 나란히 읽고, 각 행을 제곱평균제곱근으로 나눈 다음 1 − λ_init = 4/5를 곱합니다.",
    "preset.deltanet.description": "Gated DeltaNet(Qwen3-Next): 2×2 상태를 토큰마다 e^g로 "
    "감쇠시키고 델타 규칙으로 고치며, 그 옆에 층이 만들지 않고 계산하는 3×3 행렬을 둡니다",
    "preset.deltanet.reference": "qkvcalc용으로 만든 예제, Yang et al. 2024, 'Gated Delta "
    "Networks'와 transformers의 torch_recurrent_gated_delta_rule을 따름: q와 k를 L2 "
    "정규화하고(q는 √d_k로도 나눕니다), 각 토큰은 상태에 e^g를 곱하고, 상태가 자기 Key에 대해 "
    "가진 것을 읽고, 자기 Value와의 차이에 β를 곱해 Key 방향으로 씁니다. 청크 형식(청크 크기 "
    "2)도 같은 출력을 냅니다.",
    "preset.dsa.description": "DeepSeek 희소 어텐션(DeepSeek-V3.2): 헤드 2개의 인덱서가 모든 "
    "Key에 ReLU 점수를 주고, 토큰 5개가 각각 자기 top 2 Key만 봅니다 (멀티헤드 잠재 어텐션 "
    "안에서)",
    "preset.dsa.reference": "qkvcalc용으로 만든 예제, DeepSeek-AI 2025, 'DeepSeek-V3.2: Pushing "
    "the Frontier of Open Large Language Models'와 transformers의 DeepseekV32Indexer를 따름: "
    "인덱서의 Query는 Query 잠재 벡터 C_Q에서, 하나뿐인 Key는 LayerNorm(X·W_IK)에서 나옵니다. "
    "인덱스 헤드마다 ReLU(q·k/√D) 점수를 주고, 헤드들에 w/√2를 곱해 더한 뒤 각 Query는 가장 좋은 "
    "Key 2개를 남깁니다: 'sat'는 'cat'과 'sat'를 남기고 'the'는 버리며, 'on'은 'the'와 'sat'를 "
    "남깁니다. DeepSeek-V3.2처럼 인덱서는 반으로 나눈 짝을, 어텐션은 이웃한 짝을 회전합니다. "
    "목표 T는 각 토큰의 출력이 [1, 0, 0, 1]이기를 요구하므로, --backward가 시작할 손실이 "
    "있습니다 (인덱서가 고른 Key는 고정).",
    "preset.mla.description": "멀티헤드 잠재 어텐션(DeepSeek-V2/V3): 토큰 5개가 토큰마다 수 3개의 "
    "Query 잠재 벡터와 수 2개의 Key/Value 잠재 벡터(각각 정규화)를 거치고, 회전 Key 하나를 헤드 "
    "2개가 함께 씁니다. --backward로 모든 잠재 가중치의 기울기를 봅니다",
    "preset.mla.reference": "qkvcalc용으로 만든 예제, DeepSeek-AI 2024, 'DeepSeek-V2: A Strong, "
    "Economical, and Efficient Mixture-of-Experts Language Model'과 transformers의 "
    "DeepseekV3Attention을 따름: 인덱서를 뺀 dsa 프리셋의 층입니다. 목표 T는 각 토큰의 출력이 "
    "[1, 0, 0, 1]이기를 요구하므로, --backward가 시작할 손실이 있습니다: L = ½·Σ(O − T)².",
    "preset.kda.description": "Kimi Delta Attention(Kimi Linear): Key 채널마다 감쇠가 하나인 "
    "Gated DeltaNet. 2×2 상태의 각 행을 자기 e^g로 감쇠시키며, 그 옆에 층이 만들지 않고 계산하는 "
    "3×3 행렬을 둡니다",
    "preset.kda.reference": "qkvcalc용으로 만든 예제, Kimi Team 2025, 'Kimi Linear'와 "
    "transformers의 recurrent_kimi_delta_attention을 따름: q와 k를 L2 정규화하고(q는 √d_k로도 "
    "나눕니다), 각 토큰은 상태의 c행에 e^(g[c])를 곱하고, 상태가 자기 Key에 대해 가진 것을 "
    "읽고, 자기 Value와의 차이에 β를 곱해 Key 방향으로 씁니다. 프리셋 deltanet은 같은 토큰과 "
    "가중치에 토큰마다 감쇠가 하나입니다. 청크 형식(청크 크기 2)도 같은 출력을 냅니다.",
    "preset.lightning.description": "라이트닝 어텐션(MiniMax): 2×2 상태를 토큰마다 e^(−λ)로 "
    "감쇠시키며 더해 가고, 그 옆에 층이 만들지 않고 계산하는 3×3 행렬을 둡니다",
    "preset.lightning.reference": "qkvcalc용으로 만든 예제, Qin et al. 2024, 'Lightning "
    "Attention-2'와 transformers의 MiniMaxLightningAttention을 따름: 스케일링도 소프트맥스도 "
    "없습니다. 각 토큰은 상태에 헤드의 고정된 감쇠 e^(−λ)를 곱하고 자기 Key와 Value의 곱을 "
    "더합니다. 블록 형식(블록 크기 2)도 같은 출력을 냅니다.",
    "preset.gqa.description": "GQA(Grouped-Query Attention): Query 헤드 4개가 Key/Value 헤드 "
    "2개를 나눠 씁니다 (d_k = 1, 인과 마스크)",
    "preset.multihead.description": "'I love cats'에 헤드 두 개: 두 헤드 모두 X 전체를 읽되 "
    "W_Q, W_K, W_V에서 각자 자기 몫의 두 열을 쓰고, W_O가 둘을 결합합니다",
    "preset.fp16overflow.description": "float16에서 넘치는 점수: q·k가 65,504(float16의 최댓값)를 "
    "훨씬 넘으면 스케일이 줄이기 전에 ∞가 되고, softmax 행은 NaN이 됩니다",
    "preset.fp16mask.description": "float16에서 −1e9 마스크는 −∞이고, 어떤 Key도 볼 수 없는 "
    "Query는 NaN 가중치를 받습니다",
    "preset.bf16rope.description": "bfloat16에서 256을 넘는 RoPE 위치: 위치를 bfloat16으로 두는 "
    "레이어는 257의 'b'를 256의 'a'와 똑같이 돌리고, 'b'는 가중치를 둘에 나눕니다. transformers의 "
    "float32 각도(--policy eager)는 둘을 구별합니다",
    "preset.bf16softmax.description": "softmax를 업캐스트하는 이유: 업캐스트 없는 "
    "bfloat16(naive)의 가중치는 eager의 float32 softmax보다 float64에서 더 멀어집니다",
    "preset.bf16tiles.description": "bfloat16 타일: bfloat16 텐서로 짜면(naive) 누적 합 ℓ = 2가 "
    "블록마다 더해지는 0.0077만큼 자라지 못합니다. 그 값이 ℓ의 마지막 자리 단위의 절반보다 작아서 "
    "블록 여덟 개가 사라집니다. FlashAttention의 float32 ℓ(--policy eager)은 그 블록들을 셉니다",
    "preset.fp8scaling.description": "배율이 있을 때와 없을 때의 float8: float8_e4m3fn으로 단순 "
    "형변환하면 점수 576과 480이 모두 448에서 멈춰 두 Key가 같아지고 가중치가 나뉩니다. FP8 "
    "커널처럼 텐서마다 배율을 두고 저장하면(--policy eager) 둘이 구별됩니다",
    "preset.padding.description": "네 토큰 길이로 패딩된 배치의 한 행: key_padding이 <pad>로는 "
    "어텐션이 가지 않게 합니다",
    "preset.pronoun.description": "이야기가 있는 예제: 'the cat sat because it was "
    "tired'에서 'it'의 Query는 'cat'에 가장 큰 가중치를 줍니다",
    "preset.sentence.description": "토큰 세 개 'I love cats'에 doc 예제의 가중치와 인과 "
    "마스크(causal)를 씁니다",
    "preset.cross.reference": "qkvcalc용으로 만든 예제: Vaswani et al. 2017, 'Attention Is "
    "All You Need'(3.2.3절)의 인코더-디코더 어텐션으로, Query는 디코더에서, Key와 Value는 "
    "인코더의 출력에서 옵니다. 'le'는 'the'를, 'chat'은 'cat'을 찾습니다. W_K가 'is'와 "
    "'sleeping'에 같은 Key를 주므로 'dort'는 가중치의 대부분을 둘에 똑같이 나눕니다. Query "
    "3개, Key 4개이므로 스코어는 3×4입니다.",
    "preset.alibi.reference": "qkvcalc용으로 만든 예제, Press et al. 2022, 'Train Short, "
    "Test Long: Attention with Linear Biases Enables Input Length Extrapolation'을 따름: 경사 "
    "1/2과 1/4은 헤드 8개에 대한 논문의 방법(2^-1, 2^-2, ..., 2^-8)의 처음 두 값입니다. "
    "alibi: true로 두면 헤드 2개짜리 모델은 대신 2^-4와 2^-8을 받습니다. 바이어스 -slope·|i - "
    "j|는 인과 마스크 전에, 스케일링된 스코어에 더합니다.",
    "preset.llama.reference": "qkvcalc용으로 만든 예제, Touvron et al. 2023, 'LLaMA: Open "
    "and Efficient Foundation Language Models'를 따라 Hugging Face의 LlamaAttention이 "
    "계산하는 대로: 바이어스 없는 q_proj, k_proj, v_proj, 헤드마다 rotate_half로 회전하는 "
    "위치 임베딩(theta 10000), GQA(Grouped-Query Attention, repeat_kv), 인과 마스크, "
    "소프트맥스, o_proj. d_model = 4, d_k = d_v = 2.",
    "preset.rope.reference": "qkvcalc용으로 만든 예제, Su et al. 2021, 'RoFormer: Enhanced "
    "Transformer with Rotary Position Embedding'을 따름. d_k = 2라서 q와 k에는 차원 짝이 "
    "하나뿐이고 그 주파수는 theta^0 = 1이므로, 각 벡터는 위치마다 1라디안씩 회전합니다. "
    "RoPE가 없으면 두 번째 토큰은 첫째와 셋째 토큰에게 같은 스코어(1)를 줍니다. RoPE가 있으면 "
    "거리가 1인 q_2·k_1과 q_4·k_3은 cos 1 - sin 1 = -0.3012로 같고, 거리가 3인 q_4·k_1은 cos "
    "3 - sin 3 = -1.1311입니다.",
    "preset.window.reference": "qkvcalc용으로 만든 예제, Beltagy et al. 2020, 'Longformer'와 "
    "Jiang et al. 2023, 'Mistral 7B'를 따름. 윈도우 W = 3은 Query 자신의 위치도 셉니다: Query "
    "i는 i - 3 < j <= i인 Key j를 봅니다 (Hugging Face의 sliding_window와 같은 규칙). "
    "가중치는 sentence 프리셋의 것입니다.",
    "preset.decode.reference": "qkvcalc용으로 만든 예제, Pope et al. 2022, 'Efficiently "
    "Scaling Transformer Inference'의 KV 캐시와 Hugging Face의 past_key_values를 따름. "
    "가중치는 sentence 프리셋의 것이고, 단계들을 쌓으면 네 토큰 전체를 인과 마스크로 한 번에 "
    "계산한 결과와 같습니다.",
    "preset.tiles.reference": "qkvcalc용으로 만든 예제, Milakov와 Gimelshein 2018, 'Online "
    "normalizer calculation for softmax'와 Dao et al. 2022, 'FlashAttention'(알고리즘 1)을 "
    "따름. 가중치는 sentence 프리셋의 것이고, 블록마다 Key가 B = 2개이며 마지막 블록에는 "
    "하나만 있습니다.",
    "preset.doc.reference": "글 'Q·K·V는 어디서 만들어질까? 가중치 행렬로 만드는 원리'의 2차원 "
    "예제: 토큰 하나 x = [1, 2]에서 Q = [1, 2], K = [1, 3], V = [3, 2]가 나옵니다. Key가 "
    "하나뿐이라 스코어와 상관없이 가중치는 1입니다. sentence 프리셋은 토큰 두 개를 더해 "
    "가중치가 서로 경쟁하게 합니다.",
    "preset.dk64.reference": "√d_k로 나누는 이유를 보여 주려고 qkvcalc용으로 만든 예제: "
    "원래 Transformer의 헤드 하나처럼(d_model = 512, 헤드 8개) d_k = 64인 토큰 4개입니다. Q와 "
    "K의 각 성분을 평균 0, 분산 1로 서로 독립적으로 뽑았으므로, 스케일링 전의 스코어 q·k는 "
    "분산이 64(전형적인 크기 8)입니다. 나누지 않으면 소프트맥스가 가중치를 거의 다 Key 하나에 "
    "주지만, √64 = 8로 나누면 가중치가 고루 퍼집니다. 숫자는 numpy로 만들었습니다: "
    "rng = numpy.random.default_rng(64); q = rng.standard_normal((4, 64)).round(2); "
    "k = rng.standard_normal((4, 64)).round(2); v = rng.integers(-3, 4, (4, 2)).",
    "preset.gqa.reference": "qkvcalc용으로 만든 예제, Ainslie et al. 2023, 'GQA: Training "
    "Generalized Multi-Query Transformer Models from Multi-Head Checkpoints'를 따름: Query 헤드 "
    "1–2는 K/V 헤드 1을, 헤드 3–4는 K/V 헤드 2를 읽습니다. enable_gqa=True로 부른 PyTorch의 "
    "scaled_dot_product_attention과 같습니다. 나눠 쓰는 덕분에 KV 캐시가 절반으로 줄어듭니다. "
    "d_k = 1이므로 스케일링 값은 1/√1 = 1입니다.",
    "preset.multihead.reference": "qkvcalc용으로 만든 예제, Vaswani et al. 2017, 'Attention "
    "Is All You Need' 3.2.2절을 따름: MultiHead(Q, K, V) = Concat(head_1, head_2)·W_O. 두 헤드 "
    "모두 X 전체를 읽고, 헤드 1은 W_Q, W_K, W_V의 1–2열을, 헤드 2는 3–4열을 씁니다. "
    "nn.MultiheadAttention이 나누는 방식과 같습니다. W_O가 4×4이므로 출력의 각 열이 두 헤드를 "
    "모두 결합할 수 있습니다.",
    "preset.fp16overflow.reference": "qkvcalc용으로 만든 예제. transformers eager 어텐션에서 "
    "OPT, XGLM, Qwen2가 반정밀도에서 낸 NaN을 따랐습니다. X의 1행은 (180, 190)이고 W_Q = W_K = "
    "I이므로 Q·Kᵀ[1,1] = 180² + 190² = 68,500입니다. 이는 float16의 가장 큰 유한수 65,504를 "
    "넘으므로 float16에서는 ∞입니다. 스케일은 곱 다음에 옵니다(eager는 점수에 곱합니다). 그래서 ∞ "
    "× 1/√2도 ∞이고, 그 행의 e^(s − max)는 e^(∞ − ∞) = NaN입니다. 스케일을 먼저 곱하면 (q/√2)·k ≈ "
    "48,437로 float16에서 유한합니다(PyTorch는 48,448). float64 쌍둥이에는 문제가 없습니다.",
    "preset.fp16mask.reference": "qkvcalc용으로 만든 예제. PyTorch 이슈 103749와 직접 짠 레이어의 "
    "−1e9 마스크를 따랐습니다. 첫 Query는 어떤 Key에도 어텐션할 수 없습니다(배치에서 왼쪽 패딩된 "
    "행처럼). naive 정책에서 마스크는 −1e9를 쓰는데(torch.where(mask, s, -1e9). masked_fill은 "
    "float16에서 −1e9를 아예 거부합니다), float16은 이 값을 담을 수 없습니다(가장 작은 유한수는 "
    "−65,504). 그래서 −∞가 되고, 1행은 전부 −∞, 행의 최댓값도 −∞이며 e^(−∞ − (−∞))는 NaN입니다. "
    "--policy eager에서는 마스크가 대신 −65,504를 더하므로 1행은 유한하게 남고 가중치가 Key들에 "
    "나뉩니다(float16으로 반올림한 1/3씩). float64 쌍둥이는 scaled_dot_product_attention처럼 그 "
    "행에 가중치 0을 줍니다.",
    "preset.bf16tiles.reference": "qkvcalc용으로 만든 예제. Dao 외 2022, 'FlashAttention'(누적 "
    "최댓값과 누적 합, FlashAttention-2에서는 지금까지의 출력도 float32로 둡니다)과 Higham 2002, "
    "'Accuracy and Stability of Numerical Algorithms'(낮은 정밀도로 두는 합은 마지막 자리 단위의 "
    "절반보다 작은 항을 모두 잃습니다)를 따랐습니다. Query 하나, W_Q = W_K = W_V = I, 배율 1: "
    "점수는 Key들의 첫 열로, 'a'와 'b'는 0, 나머지 Key 열여섯 개는 각각 −5.5625이고 한 블록에 두 "
    "개씩입니다. naive 정책에서는 작은 블록마다 2 × e^(−5.5625) ≈ 0.0077을 ℓ = 2에 더하는데, "
    "거기서 bfloat16의 수는 0.015625 간격이라 ℓ은 블록 9까지 2로 남고(float64: 2.0614) 출력은 "
    "(−0.1709, 0.0310)으로 float64의 (−0.1658, 0.0298)에서 마지막 자리 단위로 약 10 떨어집니다. "
    "같은 정책이라도 타일 없이 계산하면 행의 합을 float32로 구하므로 0.27 안입니다. --policy "
    "eager로 실행해 보세요: ℓ은 float32의 2.0614262이고 출력 (−0.1660, 0.0298)은 행 전체로 계산한 "
    "것과 같으며 float64에서 마지막 자리 단위로 0.27 떨어집니다.",
    "preset.bf16rope.reference": "qkvcalc용으로 만든 예제. transformers 이슈 29285(bfloat16에서 "
    "RoPE의 정밀도 손실)를 따랐습니다. bfloat16의 가수는 8비트라서 256부터 512까지는 짝수 정수만 "
    "담습니다. 257은 256으로, 259는 260으로 반올림됩니다(같으면 짝수 쪽). 같은 벡터 (8, 0)을 가진 "
    "토큰 네 개가 위치 256부터 259에 있고, W_Q = W_K = W_V = I, 차원 한 쌍이 ω = 1로 돕니다(d_k = "
    "2). naive 정책에서는 위치, inv_freq, 둘의 곱, cos, sin을 각각 bfloat16으로 반올림하므로 "
    "'a'와 'b'가 같은 각도로 돕니다. 'b'가 'a'와 자신에게 주는 점수는 모두 64이고 'b'는 가중치의 "
    "0.5를 'a'에 줍니다(float64: 약 9e−10). 259의 'd'는 260에 있는 것처럼 돕니다. --policy "
    "eager로 실행해 보세요. transformers의 회전 임베딩처럼 위치에서 각도를 float32로 구하고 cos와 "
    "sin만 bfloat16으로 반올림합니다. 'b'가 'a'에 주는 점수는 34.75(float64: 34.58)이고 가중치는 "
    "약 1.1e−9입니다.",
    "preset.bf16softmax.reference": "qkvcalc용으로 만든 예제. flash-attention 이슈 "
    "613('softmax에 왜 float32를 골랐나요?')을 따랐습니다. 토큰 여덟 개, W_Q = W_K = W_V = I. "
    "naive 정책에서는 e^(s − max), 행 합, 나눗셈을 각각 bfloat16(가수 8비트)로 반올림합니다. 그 "
    "결과 가중치가 float64 쌍둥이에서 마지막 자리 단위로 최대 2.45만큼 떨어집니다. --policy "
    "eager로 실행해 보세요. 같은 bfloat16 점수에서 float32로 softmax를 계산하고 가중치만 "
    "반올림하면 0.53 안에 들어옵니다.",
    "preset.fp8scaling.reference": "qkvcalc용으로 만든 예제. Q, K, V를 텐서마다 배율 하나를 두고 "
    "float8로 저장하는 FP8 어텐션 커널(FlashAttention-3, Transformer Engine)을 따랐습니다. W_Q = "
    "W_K = W_V = I이므로 점수의 1행은 24·24 = 576, 0, 24·20 = 480입니다. naive 정책에서는 모든 "
    "텐서를 float8_e4m3fn으로 단순 형변환합니다. 이 형식의 가장 큰 수는 448이고 ∞가 없어서 "
    "PyTorch의 형변환은 448에서 멈춥니다. 그래서 576과 480은 둘 다 448, 배율을 곱한 점수는 둘 다 "
    "320이 되고, 'sun'은 가중치를 'sun'과 'star'에 0.5씩 나눕니다(float64: 1과 약 3e−30). 출력은 "
    "(22, 10)이고 float64는 (24, 0)입니다. --policy eager로 실행해 보세요. 각 텐서를 s·round(t / "
    "s), s = max|t| / 448로 저장하고, 곱의 합은 float32로 구한 뒤 배율을 다시 곱하며, 점수는 "
    "float32로 둡니다. 1행은 576.0001, 0, 493.71, 가중치는 1, 0, 약 5e−26(float64: 약 3e−30), "
    "출력은 (24.000004, 0)입니다. 대가: e4m3fn의 가수는 3비트라서 20은 20.571로 저장됩니다.",
    "preset.padding.reference": "qkvcalc용으로 만든 예제: 길이가 다른 문장들을 한 배치로 "
    "묶을 때처럼 'cats sleep'을 길이 4로 패딩했습니다. BERT의 attention_mask처럼 key_padding "
    "[1, 1, 0, 0]이 실제 토큰을 표시합니다. <pad> 행에도 출력이 나오지만(key_padding은 Query가 "
    "아니라 Key를 막습니다) 이후 어디에서도 쓰이지 않습니다.",
    "preset.pronoun.reference": "두 글 '[딥러닝] 트랜스포머 Attention 완벽 이해: Q, K, V의 역할과 "
    "원리'와 'Q·K·V는 어디서 만들어질까? 가중치 행렬로 만드는 원리'가 설명하는 대명사 헤드를 따라 "
    "qkvcalc용으로 만든 예제입니다. X의 열은 손으로 정한 특징(명사, 대명사, 동사나 형용사, 그 "
    "밖의 단어)입니다. W_Q는 '대명사'를 '가리킬 명사가 필요하다'는 Query로, W_K는 '명사'를 '나는 "
    "명사다'라는 Key로 바꾸므로, it·cat만 큰 스코어가 됩니다. 'it'은 가중치의 81%를 'cat'에 주고, "
    "'it'의 출력은 대부분 'cat'의 Value가 됩니다. 인과 마스크 때문에 각 단어는 자기 자신과 앞의 "
    "단어들만 봅니다. 학습된 모델이 아니라 이해를 위한 직관입니다: 실제로 학습된 헤드는 이렇게 "
    "깔끔한 경우가 드물고, 차원마다 이름이 붙어 있지도 않으며, 헤드의 역할은 사람이 정해 주는 "
    "것이 아니라 학습으로 생깁니다.",
    "preset.sentence.reference": "doc 예제(글 'Q·K·V는 어디서 만들어질까? 가중치 행렬로 만드는 "
    "원리')의 가중치를 토큰 세 개짜리 문장에 쓴 예제입니다. 인과 마스크 때문에 디코더에서처럼 각 "
    "토큰은 자기 자신과 앞의 토큰들만 봅니다. 'love'를 보세요: 그 Query [0, 1]은 자기 Key [0, "
    "1]과 방향이 똑같지만(cos θ = 1), 가중치의 80%를 Key [1, 3]이 더 긴 'I'에 줍니다. q·k = "
    "|q|·|k|·cos θ는 방향뿐 아니라 길이도 반영합니다.",
    # ---- input errors: keys and structure ----------------------------------------------
    "key.unknown_suggest": "알 수 없는 키 {key!r}: 혹시 {suggestion!r}인가요?",
    "key.unknown": "알 수 없는 키 {key!r}. 입력 형식에 있는 키: {known}",
    "key.not_string": "키는 문자열이어야 합니다. 받은 키: {key}",
    "key.duplicate": "키 {key!r}: 같은 키({canonical!r})가 두 번 주어졌습니다. 하나만 남기세요",
    "input.not_object": "입력은 x, wq, wk, wv … 키가 있는 JSON 객체여야 합니다. 받은 값의 "
    "종류: {kind}",
    "kind.list": "리스트",
    "kind.string": "문자열",
    "kind.number": "숫자",
    "kind.bool": "참/거짓 값",
    "kind.null": "null 값",
    "kind.value": "그 밖의 값",
    "input.missing": "빠진 항목: {missing}. X와 가중치 W_Q, W_K, W_V를 주거나 "
    "Q, K, V를 직접 주세요",
    "input.missing_direct": "빠진 항목: {missing}. Q, K, V를 직접 줄 때는 셋 모두 필요합니다",
    "input.mixed": "X와 W_Q, W_K, W_V를 주거나 Q, K, V를 직접 주거나, 둘 중 하나만 하세요 "
    "(직접 준 것: {direct}, 선형 투영용: {projecting})",
    "input.bo_without_wo": "W_O 없이 b_O가 주어졌습니다. 출력 편향은 출력 선형 투영에 딸린 "
    "값입니다",
    "input.empty": '입력이 비어 있습니다. {{"x": [1, 2], "wq": …}} 같은 JSON 객체가 필요합니다',
    "input.none": "입력이 없습니다. JSON 파일, 표준 입력을 읽는 '-', --preset NAME, "
    "--x/--wq/--wk/--wv 중 하나를 주세요 (예: qkvcalc explain --preset doc)",
    "input.json": "올바른 JSON이 아닙니다 ({line}번째 줄, {col}번째 글자): {reason}",
    "input.json_value": "올바른 JSON이 아닙니다: {reason}",
    "input.json_deep": "JSON의 중첩이 너무 깊습니다. 행렬은 숫자 행들의 리스트로, 두 단계 "
    "깊이입니다",
    "input.not_utf8": "입력이 UTF-8 텍스트가 아닙니다 ({offset}번째 바이트: {byte})",
    "input.cannot_start": "입력에서 공백이 아닌 첫 바이트가 {byte}(위치 {offset})인 형식은 "
    "qkvcalc가 읽지 못합니다: 문제는 JSON 객체이거나 numpy .npz 파일입니다",
    "input.blank_start": "입력이 공백과 줄바꿈 {count}바이트로 시작하고도 계속됩니다: 문제는 "
    "JSON 객체이거나 numpy .npz 파일입니다",
    "input.too_big": "입력이 {limit}바이트보다 큽니다. 정말 필요하면 --max-bytes로 한도를 올리세요",
    "input.file_missing": "파일이 없습니다: {path}",
    "input.file_unreadable": "파일을 읽을 수 없습니다: {path} ({reason})",
    "input.trace_without_input": '"input"이 없는 qkvcalc 추적 문서(schema qkvcalc.trace/1)입니다: '
    "다시 실행하려면 이 버전의 --format json으로 새로 쓰세요",
    "input.trace_brief": "이 추적 문서는 --detail brief로 쓰여 입력의 큰 행렬({fields})이 "
    "빠져 있습니다: 다시 실행하려면 --detail full로 새로 쓰세요",
    "input.from": "{origin}에서",
    "input.inline": "--{option}에서",
    "inline.grammar": "{text!r}: 행렬은 숫자로 된 행들을 ';'로 나누어 쓰세요. 예: \"1 2; 3 4\"",
    "inline.comma_rows": "{text!r}: 숫자 묶음 사이의 쉼표로는 전부가 한 행이 됩니다. "
    "행은 ';'로 나누고(\"{rows}\"), 한 행의 숫자는 공백이나 쉼표 중 하나로만 나누세요",
    # ---- arrays (.npz, .npy, tensors) and choosing stages (input/arrays.py, select.py) --
    "array.bad_file": "{origin}: qkvcalc가 읽을 수 있는 numpy 파일이 아닙니다({reason})",
    "array.pickle": "{origin}에는 Python 객체가 들어 있는데, qkvcalc는 객체를 언피클하지 "
    "않습니다(allow_pickle=False). 숫자, 불리언, 문자열로 저장하세요",
    "array.truncated": "{origin}: {shape} 배열({need}바이트)이라고 적혀 있지만 실제로는 "
    "{have}바이트뿐입니다",
    "array.not_npy": "{origin}: .npy 파일이 아닙니다(numpy의 np.save로 만듭니다)",
    "array.npz_member": "{origin}의 멤버 {member!r}: 배열(.npy)이 아닙니다",
    "array.npz_method": "{origin}: 압축 방식이 {method}입니다. .npz는 np.savez와 "
    "np.savez_compressed가 쓰는 대로 배열을 그대로 또는 deflate로 압축해 담습니다",
    "array.npz_duplicate": "{origin}에 이름이 {member!r}인 항목이 둘 있습니다. 어느 쪽인지 알 수 "
    "없으므로 어느 것도 읽지 않습니다",
    "array.npz_too_many": "{origin}에 항목이 {count}개 있습니다. 문제의 키는 많아야 "
    "{limit}개이므로 읽지 않습니다",
    "array.npz_empty": "{origin}에 배열이 없습니다. 문제는 "
    "np.savez(FILE, x=…, wq=…, wk=…, wv=…)로 저장하세요",
    "array.npz_json": "{origin}: 멤버 _json.npy에는 문제의 나머지 키를 담은 JSON 객체 하나가 "
    "문자열로 들어 있어야 합니다",
    "array.npy_as_source": ".npy 파일에는 문제 전체가 아니라 행렬 하나가 들어 있습니다. "
    "옵션에 주거나(--x x.npy), 문제 전체를 np.savez(FILE, x=…, wq=…, wk=…, wv=…)로 .npz에 "
    "저장하세요",
    "array.dtype": "{field}: {dtype} 배열입니다. qkvcalc는 실수를 읽습니다"
    "(마스크는 0/1이나 불리언)",
    "array.too_many_dims": "{field}: {ndim}차원 배열({shape})입니다. 행렬은 2차원입니다"
    "(배치라면 x[0]처럼 하나만 주세요)",
    "select.no_stages": "--stages에 단계가 없습니다. 이 계산의 단계: {valid}",
    "select.unknown_stage_suggest": "이 실행에는 {id!r} 단계가 없습니다. {close!r} 단계를 "
    "뜻했나요? 단계 목록: {valid}",
    "select.unknown_stage": "이 계산에는 {id!r} 단계가 없습니다. 단계: {valid}",
    "select.qualified_stage": "--stages {id!r}: 단계는 id만으로 고릅니다({base}). 그러면 모든 "
    "블록과 스텝의 그 단계가 나옵니다 (헤드는 --head로 고릅니다)",
    "select.head_range": "{head}번 헤드는 없습니다. 이 문제의 헤드는 1부터 {heads}까지입니다",
    # ---- input errors: numbers and matrices ------------------------------------------------
    "number.grammar": "{field}: {text!r}: qkvcalc가 읽을 수 있는 숫자가 아닙니다. 정수, 소수, "
    "분수, 제곱근으로 쓰세요: 3, -0.5, 1/2, -3e-2, sqrt(2), 1/sqrt(2)",
    "number.empty": "{field}: 빈 문자열은 숫자가 아닙니다",
    "number.too_long": "{field}: 숫자를 {limit}자보다 길게 썼습니다",
    "number.too_deep": "{field}: {text!r}에서 괄호나 sqrt(가 {limit}겹보다 깊게 중첩됩니다. "
    "숫자를 더 간단히 쓰세요",
    "number.zero_division": "{field}: {text!r}에서 0으로 나눕니다",
    "number.negative_sqrt": "{field}: {text!r}에서 음수의 제곱근을 구합니다",
    "number.not_finite": "{field}: 유한한 수가 아닙니다({text}). 모든 숫자는 유한해야 합니다",
    "number.nan": "{field}: NaN입니다. 모든 숫자는 유한해야 합니다",
    "matrix.not_list": "{field}: 행렬(숫자 행들의 리스트)이어야 합니다. 받은 값: {value}",
    "matrix.empty": "{field}: 비어 있습니다. 행렬에는 숫자 행이 적어도 하나 있어야 합니다",
    "matrix.empty_row": "{field}: {row}행이 비어 있습니다. 행에는 숫자가 적어도 하나 있어야 합니다",
    "matrix.mixed": "{field}: 다른 행들은 리스트인데 {row}행만 숫자입니다. 모든 행을 리스트로 "
    "쓰세요",
    "matrix.ragged": "{field}: {row}행에는 숫자가 {length}개, 1행에는 {width}개 있습니다. "
    "행렬의 모든 행은 길이가 같아야 합니다",
    "matrix.too_deep": "{field}{where}: 숫자가 올 자리에 리스트가 있습니다. 행렬은 숫자 행들의 "
    "리스트로, 두 단계 깊이입니다",
    "matrix.bool": "{field}{where}: 숫자가 올 자리에 true/false가 있습니다. 1 또는 0으로 쓰세요",
    "matrix.null": "{field}{where}: 숫자가 올 자리에 null이 있습니다",
    "matrix.not_number": "{field}{where}: 숫자가 아닙니다. 받은 값: {value}",
    "vector.not_flat": "{field}: 열마다 숫자 하나씩인 1차원 리스트여야 하는데, 행이 {rows}개 "
    "있습니다",
    "heads.not_positive": "{field}: 1부터 {limit}까지의 정수여야 합니다. 받은 값: {value}",
    "heads.kv_divide": "heads = {heads}: kv_heads = {kv_heads}의 배수가 아닙니다. Key/Value "
    "헤드마다 같은 수의 Query 헤드를 맡아야 합니다",
    "tokens.not_strings": "{field}: 행마다 하나씩, 이름(문자열)의 리스트여야 합니다",
    "tokens.count": "{field}: 이름은 {count}개인데 {rows}의 행은 {n}개입니다. 행마다 이름이 "
    "하나씩 필요합니다",
    "tokens.source_without_source": "source 행렬 없이 source_tokens가 주어졌습니다",
    "scale.not_number": "scale은 숫자여야 합니다. 받은 값: {value}",
    "layout.unknown": 'layout은 "rows"(Q = X·W_Q) 또는 "torch"(PyTorch가 저장하는 대로 '
    "out×in 모양의 가중치)여야 합니다. 받은 값: {value}",
    # ---- input errors: shapes -------------------------------------------------------------
    "shape.weight_rows": "{field}의 모양은 {shape}, {what}의 열은 {rows}개입니다. "
    "{what}·{field}에서 안쪽 차원이 맞아야 하므로 {field}에는 행이 {rows}개 필요합니다",
    "shape.weight_rows_hint_torch": "{field}의 모양은 {shape}, {what}의 열은 {rows}개입니다. "
    "{what}·{field}에서 안쪽 차원이 맞아야 하므로 {field}에는 행이 {rows}개 필요합니다. "
    "PyTorch가 선형 층의 가중치를 저장하는 방식(out×in)처럼 전치된 것으로 보입니다: "
    '"layout": "torch"를 추가하세요(또는 --layout torch)',
    "shape.weight_rows_hint_rows": "{field}의 모양은 torch 레이아웃(out×in)으로 {shape}인데, "
    "{what}의 열이 {rows}개이므로 그 자리에는 열이 {rows}개 필요합니다. rows 레이아웃"
    '(in×out)으로 쓴 것으로 보입니다: "layout": "torch"를 빼세요',
    "shape.source_width": "source의 모양은 {source}, X는 {x}입니다. Key와 Value는 같은 W_K, "
    "W_V로 source에서 선형 투영되므로, 둘 다 열이 d_model개여야 합니다",
    "shape.kv_rows": "K의 모양은 {k}, V는 {v}입니다. 둘의 행 수가 같아야 합니다(토큰마다 Key "
    "하나, Value 하나)",
    "shape.heads_divide": "{field}의 열 {cols}개는 {what} = {heads}개의 같은 조각으로 나누어지지 "
    "않습니다. 열 수가 {heads}의 배수여야 합니다",
    "shape.dk_mismatch": "{q}의 열은 {qcols}개라 heads = {heads}이면 Query 헤드마다 "
    "d_k = {d_k}이고, {k}의 열은 {kcols}개라 kv_heads = {kv_heads}이면 Key 헤드마다 "
    "d_k = {dk2}입니다. Q·Kᵀ로 곱하려면 Query와 Key의 d_k가 같아야 합니다",
    "shape.bias": "{field}에는 숫자가 {length}개인데 {weight}의 열은 {cols}개입니다. 편향은 "
    "열마다 숫자를 하나씩 더합니다",
    "mask.unknown": 'mask는 "none", "causal" 또는 0/1 행렬이어야 합니다. 받은 값: {value}',
    "mask.unknown_suggest": 'mask 값 {value}: 마스크의 종류가 아닙니다. "{kind}" 마스크를 '
    '뜻했나요? (mask는 "none", "causal" 또는 0/1 행렬입니다)',
    "mask.shape": "mask의 모양은 {shape}인데 어텐션 스코어는 {n}×{m}(Query × Key)입니다. "
    "스코어마다 0/1이 하나씩 필요합니다",
    "mask.not_flags": "{field}{where}: 0/1의 리스트여야 합니다. 받은 값: {value}",
    "mask.not_flag": "{field}{where}: {value}. 마스크 값은 1(어텐션 허용) 또는 0(마스킹)입니다",
    "mask.padding_length": "key_padding의 값은 {length}개인데 Key는 {m}개입니다. Key마다 "
    "1(실제 토큰) 또는 0(패딩)이 하나씩 필요합니다",
    "overflow": "{stage} 단계의 {row}행 {col}열(헤드 {head})에서 float64 범위를 넘었습니다. "
    "입력 값을 줄이세요",
    # ---- --dtype: the precision lab (qkvcalc.run.precision) -----------------------------
    "precision.dtype_unknown": "--dtype에는 {known} 중 하나를 씁니다. 받은 값: {value!r}",
    "precision.policy_unknown": "--policy에는 {known} 중 하나를 씁니다. 받은 값: {value!r}",
    "precision.with_option": "--dtype {dtype}: (아직) {option} 옵션과 함께 쓸 수 없습니다. "
    "{option} 없이 --dtype을 쓰거나, --dtype 없이 {option} 옵션을 쓰세요",
    "precision.op_unsupported": "--dtype은 {stage} 단계(연산 {op!r})를 아직 낮은 정밀도로 "
    "계산하지 않습니다. --dtype 없이 실행하세요",
    "precision.stored_f32": "커널은 이 단계를 float32로 둡니다(softmax(…, dtype=float32)). 이 "
    "단계의 수와 ulp는 float32 기준입니다.",
    "precision.stage_exact": "{dtype}에서 정확합니다. 모든 칸이 float64 쌍둥이와 같습니다.",
    "precision.stage_error": "{dtype} 값과 float64 쌍둥이의 차이: 최대 {abs}(마지막 자리 단위로 "
    "{ulp} ulp, 지금까지 쌓인 오차 전부). 이 단계 자신의 반올림이 더한 오차는 최대 {added} "
    "ulp입니다.",
    "precision.policy.eager": "transformers의 eager 어텐션처럼 {dtype} 정밀도로 계산했습니다. 곱의 "
    "합은 float32로 더한 뒤 {dtype} 정밀도로 반올림하고, 마스킹된 점수에는 {dtype}의 가장 작은 "
    "유한수를 더하며, softmax는 float32로 계산한 뒤 가중치를 {dtype} 정밀도로 반올림합니다. 각 "
    "단계는 float64 쌍둥이와 나란히 보입니다.",
    "precision.policy.naive": "직접 짠 레이어처럼 업캐스트 없이 {dtype} 정밀도로 계산했습니다. "
    "마스킹된 칸에 −1e9, 그다음 s − max, e^(s − max), 행 합, 나눗셈을 각각 {dtype} 정밀도로 "
    "반올림합니다. 각 단계는 float64 쌍둥이와 나란히 보입니다.",
    "precision.approx": "각 결과는 {dtype} 정밀도로도 반올림되므로, 계산 과정의 ≈는 보이는 소수 "
    "자리 때문이 아니라 그 반올림 때문일 수 있습니다.",
    "precision.most_added": "자기 오차를 가장 많이 더한 단계: {stage}(헤드 {head}). 자신의 "
    "{dtype} 피연산자로 구한 정확한 결과와 최대 {added} ulp 차이 납니다.",
    "precision.mask_eager": "마스킹된 칸에는 {dtype}의 가장 작은 유한수({fill})를 float32로 "
    "점수에 더한 뒤 {dtype} 정밀도로 반올림합니다. transformers의 eager 어텐션이 마스크를 더하는 "
    "방식입니다. 마스킹된 칸은 −∞가 아니라 아주 작은 수입니다(float16에서는 약 −16보다 작은 "
    "점수에 −65,504를 더하면 −∞로 반올림됩니다).",
    "precision.mask_naive": "마스킹된 칸은 {fill}의 {dtype} 반올림 값입니다. 직접 짠 "
    "레이어의 torch.where(mask, s, −1e9)가 주는 값입니다(float16에서는 −∞. PyTorch의 "
    "masked_fill은 float16에서 −1e9를 아예 거부합니다: 값이 넘칩니다).",
    "precision.fully_masked_equal": "헤드 {head}: 모든 Key가 마스킹된 Query: {rows}. "
    "{dtype}에서는 마스킹된 점수가 유한하므로(각각 점수에 채운 값을 더해 반올림), softmax가 그 "
    "행을 0이 아니라 Key들에 나눕니다(합이 같게 반올림된 곳은 똑같이). float64 쌍둥이는 PyTorch의 "
    "scaled_dot_product_attention처럼 0입니다.",
    "precision.fully_masked_nan": "헤드 {head}: 모든 Key가 마스킹된 Query: {rows}. "
    "{dtype}에서는 그 점수가 모두 −∞라서 softmax가 NaN(e^(−∞ − (−∞)))이고, 그 값을 읽는 뒤의 칸도 "
    "모두 NaN입니다(float64 쌍둥이의 가중치는 0).",
    "precision.why.overflow": "처음으로 유한하지 않은 칸: {stage}(헤드 {head})의 {row}행 {col}열 "
    "= {got}. 정확한 값은 {exact}이고, 그 절댓값이 {dtype}의 가장 큰 유한수({max})보다 크므로 "
    "반올림한 결과는 {got}입니다.",
    "precision.why.mask": "처음으로 유한하지 않은 칸: {stage}(헤드 {head})의 {row}행 {col}열 = "
    "{got}. 마스크는 점수 {score}에 {dtype}의 가장 작은 유한수({fill})를 더하는데, 그 합이 "
    "−{max}보다 작아서 −∞로 반올림됩니다. 모든 Key가 마스킹된 행은 전부 −∞가 되고, 그 softmax는 "
    "NaN(e^(−∞ − (−∞)))입니다.",
    "precision.why.fill": "처음으로 유한하지 않은 칸: {stage}(헤드 {head})의 {row}행 {col}열 = "
    "{got}. 마스크가 쓰는 값은 {fill}이고, {dtype}의 가장 작은 유한수 −{max}보다 작습니다. "
    "{dtype}에서 −1e9는 −∞입니다. 모든 Key가 마스킹된 행은 softmax 뒤 NaN이 됩니다.",
    "precision.why.nan_row": "처음으로 유한하지 않은 칸: {stage}(헤드 {head})의 {row}행 {col}열 = "
    "NaN. {row}행의 점수가 모두 −∞(모든 Key가 마스킹되었고, 채운 값이 {dtype}에서 −∞로 "
    "반올림됨)이므로 행의 최댓값이 −∞이고 e^(−∞ − (−∞))는 NaN입니다.",
    "precision.fp8_stored": "FP8 커널처럼 텐서 전체에 배율 하나를 두고 {dtype} 정밀도로 "
    "저장합니다. 각 수는 s × ({dtype} 수)이고, s = max|t| / {top} = {scale}입니다.",
    "precision.fp8_product": "텐서마다 배율 하나(s_A = {a}, s_B = {b})를 두고 {dtype} 정밀도로 "
    "읽습니다. {dtype} 수끼리 float32로 곱해 더한 뒤, float32로 s_A·s_B를 곱하고 편향을 더합니다.",
    "precision.fp8_kept": "FP8 커널은 이 단계를 float32로 둡니다(곱셈이 읽는 것만 float8로 "
    "저장합니다). 이 단계의 수는 float32 값이고, 오차는 각 수의 크기에서 {dtype}의 마지막 자리 "
    "단위로 셉니다.",
    "precision.policy.eager_fp8": "FP8 어텐션 커널처럼 계산했습니다. X, 가중치와 편향, 곱셈이 "
    "읽는 모든 행렬(Q, K, V, 어텐션 가중치)은 텐서마다 배율 하나를 두고 {dtype} 정밀도로 "
    "저장합니다. 배율은 s = max|t| / ({dtype}의 가장 큰 유한수)입니다. 곱의 합은 float32로 구한 뒤 "
    "배율을 다시 곱하고, 점수, 마스크, softmax, 각 곱셈의 결과는 float32로 둡니다. 각 단계는 "
    "float64 쌍둥이와 나란히 보입니다.",
    "precision.policy.naive_fp8": "배율도 업캐스트도 없이 단순 형변환처럼 {dtype} 정밀도로 "
    "계산했습니다. 모든 텐서와 모든 단계를 {dtype} 정밀도로 반올림합니다(float8_e4m3fn에는 ∞가 "
    "없어서 PyTorch의 형변환은 ±448에서 멈춥니다). 마스킹된 칸에 −1e9, 그다음 s − max, e^(s − "
    "max), 행 합, 나눗셈을 각각 반올림합니다. 각 단계는 float64 쌍둥이와 나란히 보입니다.",
    "precision.rope_positions": "각도를 구하기 전에 위치를 {dtype} 정밀도로 반올림합니다: "
    "{positions} (bfloat16은 256까지, float16은 2,048까지만 모든 정수를 담습니다). 그래서 그 "
    "위치의 토큰은 다른 위치의 각도로 돌고, 두 토큰이 똑같이 돌 수 있습니다.",
    "precision.rope_float32": "transformers의 회전 임베딩처럼 위치에서 각도를 float32로 "
    "구하고(16,777,216까지의 정수 위치는 모두 제 각도를 가집니다), cos와 sin을 {dtype} 정밀도로 "
    "반올림한 뒤 각 곱과 합을 {dtype} 정밀도로 반올림합니다.",
    "precision.sdpa_float8": "--policy sdpa에는 float32, bfloat16, float16을 씁니다. --dtype "
    "{dtype}에서는 쓸 수 없습니다: torch의 scaled_dot_product_attention에는 CPU용 float8 커널이 "
    "없습니다(--policy eager나 naive를 쓰세요)",
    "precision.sdpa_kept": "torch의 scaled_dot_product_attention({kernel} 커널)은 이 단계를 따로 "
    "두지 않습니다. 커널이 계산하는 대로 float32로 보여 줍니다.",
    "precision.mask_sdpa": "마스킹된 칸은 {fill}입니다. scaled_dot_product_attention은 불리언 "
    "마스크를 −∞로 바꿉니다(커널 안에서 float32). 모든 Key가 마스킹된 Query는 커널이 주는 대로 "
    "가중치 0, 출력 0입니다.",
    "precision.policy.sdpa_flash": "torch의 scaled_dot_product_attention이 CPU에서 {dtype} "
    "정밀도로 계산하듯, flash 커널(d_k = d_v)로 계산했습니다. Q·Kᵀ, 배율, 마스크, e^(s − max)는 "
    "float32입니다. P·V에서는 e^(s − max)를 {dtype} 정밀도로 반올림하고, 행 합은 float32 지수들로 "
    "구합니다. 출력은 {dtype} 정밀도로 반올림합니다. 커널은 P·V 뒤에 행 합으로 나눕니다. 여기 "
    "보이는 가중치는 {dtype} 지수에 1/행 합을 float32로 곱한 값이며, 출력은 float32 단위 몇 개 "
    "안에서 같습니다. 투영은 transformers의 eager 어텐션과 같습니다. 각 단계는 float64 쌍둥이와 "
    "나란히 보입니다.",
    "precision.policy.sdpa_math": "torch의 scaled_dot_product_attention이 CPU에서 {dtype} 정밀도로 "
    "계산하듯, math 커널(d_k ≠ d_v)로 계산했습니다. 모두 float32로 계산하고 출력만 {dtype} "
    "정밀도로 반올림합니다(커널은 곱하기 전에 Q와 K에 각각 √scale을 곱합니다. 여기서는 곱 뒤의 "
    "배율 한 번으로 보여 주며, float32 단위 몇 개 안에서 같습니다). 투영은 transformers의 eager "
    "어텐션과 같습니다. 각 단계는 float64 쌍둥이와 나란히 보입니다.",
    "precision.tiles_kept": "타일 커널은 FlashAttention이 블록마다 누적 최댓값, 합, 출력을 두듯 "
    "이 단계를 float32로 둡니다. 이 단계의 수와 ulp는 float32 기준입니다.",
    "precision.tiles.flash": "--tiles에서는 softmax와 A·V를 한꺼번에 계산하지 않고 "
    "FlashAttention처럼 타일로 계산했습니다. 누적 최댓값, 보정 e^(m_old − m_new), 지수 e^(s − m), "
    "누적 합 ℓ, 지금까지의 출력 O는 float32입니다. e^(s − m)은 E·V가 읽을 때 {dtype} 값으로 "
    "반올림하고, 그 곱은 float32로 누적합니다. 출력 O × (1/ℓ)은 float32로 구한 뒤 마지막에 한 번 "
    "{dtype} 값으로 반올림합니다.",
    "precision.tiles.fp8": "--tiles에서는 softmax와 A·V를 한꺼번에 계산하지 않고 "
    "FlashAttention처럼 타일로 계산하되 곱은 FP8로 합니다. 누적 최댓값, 보정, 지수, 누적 합, "
    "지금까지의 출력은 float32입니다. 각 블록의 E·V는 다른 모든 곱처럼 텐서마다 배율 하나를 두고 "
    "{dtype} 값으로 읽습니다. 출력 O × (1/ℓ)은 float32로 둡니다.",
    "precision.tiles.math": "--tiles에서는 softmax와 A·V를 한꺼번에 계산하지 않고 torch의 math "
    "커널이 softmax를 계산하듯 처음부터 끝까지 float32로 타일을 계산했습니다(그 커널은 타일로 "
    "나누지 않습니다. 여기 타일은 그 수에 FlashAttention의 반복을 적용한 것입니다). 누적 최댓값, "
    "보정, 지수, 누적 합, 지금까지의 출력은 float32이고 e^(s − m)은 E·V 전에 반올림하지 않습니다. "
    "출력 O × (1/ℓ)은 마지막에 한 번 {dtype} 값으로 반올림합니다.",
    "precision.tiles.naive": "--tiles에서는 softmax와 A·V를 한꺼번에 계산하지 않고 업캐스트 없이 "
    "{dtype} 텐서로 짠 타일로 계산했습니다. m_old − m_new, 보정 e^(m_old − m_new), s − m, 지수 "
    "e^(s − m), ℓ·c, 블록의 합(float32로 누적), 누적 합 ℓ, O·c, E·V(float32로 누적), 지금까지의 "
    "출력 O, 마지막 O / ℓ을 모두 {dtype} 값으로 반올림합니다. 그래서 둘째 블록부터는 다시 맞출 "
    "때마다 합과 지금까지의 출력이 또 반올림됩니다.",
    "precision.decode": "디코딩: 각 단계의 새 K, V 행은 계산된 그대로 캐시에 들어가고(옮기기만 "
    "하므로 반올림이 없습니다), 단계의 Query는 전체 실행과 같은 반올림으로 캐시의 모든 Key와 "
    "계산합니다.",
    "precision.decode_whole": "같은 어텐션을 --policy {policy} 아래 {dtype} 값으로 한 번에 계산한 "
    "것(보통의 인과 실행)과 비교: 칸 {cells}개 중 {same}개가 비트까지 같습니다. 최대 차이: {gap}, "
    "{dtype} 기준 {ulp} ulp.",
    "precision.tiles_whole": "--policy {policy} 아래 {dtype} 값으로 행 전체에 걸쳐 계산한 보통의 "
    "softmax(S)·V와 비교: 칸 {cells}개 중 {same}개가 비트까지 같습니다. 최대 차이: {gap}, {dtype} "
    "기준 {ulp} ulp.",
    "precision.softcap": "Gemma 2의 eager 어텐션이 점수를 제한하듯: S / {cap}, 그 tanh, {cap} "
    "값과의 곱을 각각 float32로 계산해 {dtype} 값으로 반올림합니다.",
    "precision.rmsnorm_eager": "transformers의 RMSNorm처럼: 행을 float32로 두고 mean(x²), "
    "1/√(mean + ε), x와 그 곱을 float32로 계산해 {dtype} 값으로 반올림한 뒤, 가중치({dtype} "
    "값)와의 곱을 {dtype} 값으로 반올림합니다.",
    "precision.rmsnorm_naive": "업캐스트 없이 {dtype} 텐서로 짠 x / √(mean(x²) + ε) · w: x², "
    "평균, 평균 + ε, 그 제곱근, 나눗셈, 가중치와의 곱을 각각 {dtype} 값으로 반올림합니다.",
    "precision.v_norm_eager": "Gemma 3n과 Gemma 4의 Value 정규화(가중치 없는 RMSNorm)처럼: 행을 "
    "float32로 두고 mean(x²), 1/√(mean + ε), x와 그 곱을 float32로 계산해 한 번만 {dtype} 값으로 "
    "반올림합니다.",
    "precision.v_norm_naive": "업캐스트 없이 {dtype} 텐서로 짠 V / √(mean(V²) + ε): V², 평균, "
    "평균 + ε(torch는 텐서에 파이썬 수를 더할 때 그 수도 {dtype} 값으로 바꿉니다), 그 제곱근, "
    "나눗셈을 각각 {dtype} 값으로 반올림합니다.",
    "precision.diff_maps_eager": "DiffLlama는 Δ를 만들지 않습니다. 두 맵을 따로 V''에 "
    "곱하고(어텐션 호출 한 번씩) 첫째 출력에서 λ와 둘째 출력의 곱을 뺍니다(다음 단계). 여기서 Δ는 "
    "{dtype} 가중치와 λ(= {lam}, DiffLlama의 λ는 {dtype} 텐서)로 float32에서 계산해 읽으라고 보여 "
    "줄 뿐이며(수와 ulp는 float32 기준), 다음 단계는 이 값을 읽지 않습니다.",
    "precision.diff_maps_naive": "{dtype} 텐서로 짠 계산: λ(= {lam}, {dtype} 값)와 둘째 맵의 곱, "
    "첫째 맵에서 그 곱을 뺀 값을 각각 {dtype} 값으로 반올림합니다.",
    "precision.diff_output_eager": "DiffLlama의 eager 어텐션처럼: 첫째 맵과 V''의 곱, 둘째 맵과 "
    "V''의 곱을 각각 float32로 더해 {dtype} 값으로 반올림하고, λ와 둘째 곱의 곱을 {dtype} 값으로 "
    "반올림하고, 첫째에서 그것을 뺀 값을 {dtype} 값으로 반올림합니다. 위에 보인 Δ로 계산한 "
    "Δ·V''가 아니므로, 그 곱을 다시 하는 아래 칸 계산은 마지막 자릿수에서 이 값과 다를 수 "
    "있습니다.",
    "precision.diff_norm_eager": "DiffLlama의 그룹 정규화(가중치 없는 torch RMSNorm)처럼: 행을 "
    "float32로 두고 mean(x²), 1/√(mean + ε), x와 그 곱을 float32로 계산해 한 번만 {dtype} 값으로 "
    "반올림합니다.",
    "precision.diff_norm_naive": "업캐스트 없이 {dtype} 텐서로 짠 D / √(mean(D²) + ε): D², 평균, "
    "평균 + ε(torch는 텐서에 파이썬 수를 더할 때 그 수도 {dtype} 값으로 바꿉니다), 그 제곱근, "
    "나눗셈을 각각 {dtype} 값으로 반올림합니다.",
    "precision.diff_scale": "각 칸에 1 − λ_init = {factor} 값을 float32로 곱하고(torch는 텐서와 "
    "파이썬 수의 곱을 이렇게 계산합니다) {dtype} 값으로 반올림합니다.",
    "precision.sdpa_differential": "--policy sdpa는 아직 차분 어텐션을 계산하지 "
    "않습니다(DiffLlama는 V''의 두 절반으로 torch 커널을 두 번 부릅니다). --policy eager 또는 "
    "naive를 쓰세요",
    "precision.sdpa_feature": "--policy sdpa로는 다음을 계산할 수 없습니다: {feature}. torch의 "
    "scaled_dot_product_attention에는 그 자리가 없습니다(--policy eager 또는 naive를 쓰세요)",
    "precision.feature_unsupported": "--dtype은 아직 다음을 낮은 정밀도로 계산하지 않습니다: "
    "{feature} (단계 {stage}, 연산 {op!r}). --dtype 없이, 또는 {feature} 없이 실행하세요",
    # ---- --dtype: 선형 어텐션 층 (qkvcalc.ops.state_rounding) --------------------------------
    "precision.sdpa_linear": "--policy sdpa는 선형 어텐션 층에 맞지 않습니다. 이 층은 어텐션 "
    "커널을 부르지 않습니다(--policy eager나 naive를 쓰세요)",
    "precision.policy.gated_delta.eager": "Qwen3-Next의 토큰별 torch "
    "경로(torch_recurrent_gated_delta_rule, 디코딩할 때 쓰는 경로이며, 프롬프트는 역시 float32로 "
    "계산하는 torch_chunk_gated_delta_rule을 거칩니다)처럼 {dtype} 정밀도로 계산했습니다. 투영은 "
    "float32로 더해 {dtype} 값으로 반올림하고, 그다음 q, k, v, g, β를 float32로 바꾼 뒤 L2 정규화, "
    "상태, 출력을 토큰마다 float32로 계산하며, 출력만 마지막에 {dtype} 값으로 되돌립니다. 단계마다 "
    "float64 쌍둥이를 옆에 보입니다.",
    "precision.policy.gated_delta.eager_fp8": "FP8 곱으로 계산했습니다. X와 가중치는 텐서마다 "
    "배율 하나를 두고 {dtype} 값으로 저장하고, 투영은 float32로 더해 float32로 둡니다. 그다음 "
    "Qwen3-Next의 torch 대체 경로처럼 q, k, v, g, β를 float32로 두고 L2 정규화, 상태, 출력을 "
    "토큰마다 float32로 계산합니다. 단계마다 float64 쌍둥이를 옆에 보입니다.",
    "precision.policy.gated_delta.naive": "손으로 짠 층처럼 업캐스트 없이 {dtype} 정밀도로 "
    "계산했습니다. L2 정규화, 상태의 모든 연산, 출력을 각각 {dtype} 값으로 반올림합니다(상태 "
    "자체도 {dtype} 값으로 둡니다). 단계마다 float64 쌍둥이를 옆에 보입니다.",
    "precision.policy.kimi_delta.eager": "Kimi Linear의 토큰별 "
    "경로(recurrent_kimi_delta_attention, 디코딩할 때 쓰는 경로이며, 프롬프트는 역시 float32로 "
    "계산하는 chunk_kimi_delta_attention을 거칩니다)처럼 {dtype} 정밀도로 계산했습니다. 투영은 "
    "float32로 더해 {dtype} 값으로 반올림하고, 그다음 q, k, v, g, β를 float32로 바꾼 뒤 L2 정규화, "
    "상태, 출력을 토큰마다 float32로 계산하며, 출력만 마지막에 {dtype} 값으로 되돌립니다. 단계마다 "
    "float64 쌍둥이를 옆에 보입니다.",
    "precision.policy.kimi_delta.eager_fp8": "FP8 곱으로 계산했습니다. X와 가중치는 텐서마다 "
    "배율 하나를 두고 {dtype} 값으로 저장하고, 투영은 float32로 더해 float32로 둡니다. 그다음 "
    "Kimi Linear의 recurrent_kimi_delta_attention처럼 q, k, v, g, β를 float32로 두고 L2 정규화, "
    "상태, 출력을 토큰마다 float32로 계산합니다. 단계마다 float64 쌍둥이를 옆에 보입니다.",
    "precision.policy.kimi_delta.naive": "손으로 짠 층처럼 업캐스트 없이 {dtype} 정밀도로 "
    "계산했습니다. L2 정규화, 상태의 모든 연산, 출력을 각각 {dtype} 값으로 반올림합니다(상태 "
    "자체도 {dtype} 값으로 둡니다). 단계마다 float64 쌍둥이를 옆에 보입니다.",
    "precision.l2norm_eager": "층이 float32로 바꾼 뒤에 계산합니다(Qwen3-Next와 Kimi Linear는 "
    "정규화 전에 q와 k를 float32로 바꿉니다). Σx², x·(1/√(Σx² + 10⁻⁶)), 배율을 각각 float32로 "
    "계산해 float32로 둡니다. 이 단계의 수와 마지막 자리 단위는 float32의 것입니다. 입력은 "
    "{dtype} 값이었습니다.",
    "precision.l2norm_naive": "업캐스트 없이 {dtype} 텐서로 짰습니다. x², 합(float32로 누적), "
    "+ 10⁻⁶, 제곱근, 나눗셈, 배율을 각각 {dtype} 값으로 반올림합니다.",
    "precision.l2norm_eager_unscaled": "층이 float32로 바꾼 뒤에 계산합니다(Qwen3-Next와 Kimi "
    "Linear는 정규화 전에 q와 k를 float32로 바꿉니다). Σx²와 x·(1/√(Σx² + 10⁻⁶))를 각각 "
    "float32로 계산해 float32로 둡니다. 이 단계의 수와 마지막 자리 단위는 float32의 것입니다. "
    "입력은 {dtype} 값이었습니다.",
    "precision.l2norm_naive_unscaled": "업캐스트 없이 {dtype} 텐서로 짰습니다. x², 합(float32로 "
    "누적), + 10⁻⁶, 제곱근, 나눗셈을 각각 {dtype} 값으로 반올림합니다.",
    "precision.state_eager": "{dtype} 계산도 층처럼 상태를 float32로 둡니다(q, k, v, g, β를 "
    "float32로 바꿨기 때문입니다). e^(g), 감쇠, m, v − m, β를 곱한 값, k̂·δᵀ, 합을 각각 float32로 "
    "반올림합니다. 이 단계의 수와 마지막 자리 단위는 float32의 것입니다.",
    "precision.state_naive": "상태를 {dtype} 값으로 둡니다. e^(g), 감쇠, m(곱을 반올림한 뒤 "
    "float32로 더해 반올림), v − m, β를 곱한 값, k̂·δᵀ, 합을 토큰마다 각각 {dtype} 값으로 "
    "반올림합니다. 한 단계의 반올림이 뒤의 모든 단계로 이어집니다.",
    "precision.read_eager": "o_t = S_tᵀ·q̂_t를 float32로 계산하고(곱과 합을 각각 float32로 "
    "반올림), 층이 출력을 돌려줄 때처럼 한 번만 {dtype} 값으로 바꿉니다.",
    "precision.read_naive": "o_t = S_tᵀ·q̂_t를 {dtype} 텐서로 계산합니다. 곱마다 반올림하고, 합은 "
    "float32로 누적해 {dtype} 값으로 반올림합니다.",
    "precision.weights_shown": "층은 W를 만들지 않습니다. 여기서는 {dtype} 계산의 q̂, k̂, g, β로 "
    "정확히 계산해 float32로 한 번 반올림한 값을, 출력 옆에서 읽으라고 보입니다(뒤의 어떤 단계도 "
    "읽지 않습니다). 이 단계의 수와 마지막 자리 단위는 float32의 것입니다.",
    "precision.chunked_shown": "청크 형태는 {dtype} 계산의 q̂, k̂, v, g, β로 정확히 계산해 "
    "float32로 한 번 반올림한 값입니다. 아래 출력이 이것과 다른 만큼이 토큰마다 한 단계씩 "
    "반올림한 결과입니다. 이 단계의 수와 마지막 자리 단위는 float32의 것입니다.",
    "precision.conv_eager": "causal_conv1d_fn이 {dtype} 정밀도로 계산하듯이: 출력마다 탭의 곱을 "
    "더해 한 번 {dtype} 값으로 반올림하고, 그다음 SiLU를 float32로 계산해 {dtype} 값으로 "
    "반올림합니다.",
    "precision.conv_naive": "합성곱을 한 번 {dtype} 값으로 반올림한 뒤, SiLU를 {dtype} 텐서로 "
    "손으로 짭니다. σ(x)를 반올림하고 x·σ(x)를 반올림합니다.",
    "precision.gates_eager": "층이 a.float()에서 만드는 대로의 g: dt_bias와 A_log 매개변수는 "
    "{dtype} 값이고, a + dt_bias, e^(A_log), softplus, 곱을 각각 float32로 계산하므로 g는 "
    "float32에 머뭅니다. β = σ(b)는 {dtype} 값으로 반올림합니다. 이 단계의 수와 마지막 자리 "
    "단위는 float32의 것입니다.",
    "precision.gates_naive": "{dtype} 텐서로 짰습니다. a + dt_bias, e^(A_log), softplus, 곱을 "
    "각각 {dtype} 값으로 반올림하고, β = σ(b)도 {dtype} 값으로 반올림합니다.",
    "precision.kda_gates_eager": "Kimi Linear의 망각 게이트가 F.float()에서 만드는 대로의 g: "
    "dt_bias와 A_log 매개변수는 {dtype} 값이고, F + dt_bias, e^(A_log), softplus, 곱을 각각 "
    "float32로 계산하므로 g는 float32에 머뭅니다. β = σ(b)는 {dtype} 값으로 반올림합니다. 이 "
    "단계의 수와 마지막 자리 단위는 float32의 것입니다.",
    "precision.kda_gates_naive": "{dtype} 텐서로 짰습니다. F + dt_bias, e^(A_log), softplus, 곱을 "
    "각각 {dtype} 값으로 반올림하고, β = σ(b)도 {dtype} 값으로 반올림합니다.",
    "precision.kda_gates_float32": "Ling 3.0의 망각 게이트가 만드는 대로의 g: A_log와 dt_bias는 "
    "float32로 두고(그 체크포인트는 어떤 dtype에서도 그렇게 둡니다), F.float() + dt_bias, "
    "e^(A_log), softplus, 곱을 각각 float32로 계산한 뒤 g를 {dtype} 값으로 바꿉니다. β = σ(b)는 "
    "{dtype} 값으로 반올림합니다.",
    "precision.kda_bounded_float32": "Ling 3.0의 망각 게이트가 만드는 대로의 g: A_log와 dt_bias는 "
    "float32로 두고(그 체크포인트는 어떤 dtype에서도 그렇게 둡니다), F.float() + dt_bias, "
    "e^(A_log), 곱, σ, 그리고 하한(lower_bound)과의 곱을 각각 float32로 계산한 뒤 g를 {dtype} "
    "값으로 바꿉니다. "
    "β = σ(b)는 {dtype} 값으로 반올림합니다.",
    "precision.kda_bounded_naive": "{dtype} 텐서로 짰습니다. A_log와 dt_bias를 {dtype} 값으로 "
    "반올림하고, F + dt_bias, e^(A_log), 곱, σ, 그리고 하한(lower_bound)과의 곱을 각각 {dtype} "
    "값으로 반올림하며, "
    "β = σ(b)도 {dtype} 값으로 반올림합니다.",
    "precision.conv_float32": "conv1d를 float32로 두는 Ling 3.0의 causal_conv1d_fn이 계산하듯이(그 "
    "체크포인트는 어떤 dtype에서도 그렇게 둡니다): {dtype} 입력을 float32로 바꾸고, 출력마다 탭의 "
    "곱을 float32로 더하고, SiLU도 float32로 계산한 뒤 한 번 {dtype} 값으로 반올림합니다.",
    "precision.gated_norm_eager": "Qwen3NextRMSNormGated처럼: 행을 float32로 두고 mean(x²), "
    "1/√(mean + ε), x와 그 곱을 float32로 계산해 {dtype} 값으로 바꾼 뒤, 가중치({dtype} 값)와의 "
    "곱을 {dtype} 값으로 반올림합니다.",
    "precision.gated_norm_strict": "KimiLinearRMSNormGated처럼 처음부터 끝까지 float32로: "
    "mean(x²), 1/√(mean + ε), x와 그 곱, 그리고 가중치({dtype} 값을 float32로 바꾼 것)와의 곱을 "
    "계산하고, 게이트 뒤까지 float32로 둡니다. 이 단계의 수와 마지막 자리 단위는 float32의 "
    "것입니다.",
    "precision.gated_norm_naive": "업캐스트 없이 {dtype} 텐서로 짰습니다. x², 평균, 평균 + ε, 그 "
    "제곱근, 나눗셈, 가중치와의 곱을 각각 {dtype} 값으로 반올림합니다.",
    "precision.gated_eager": "N과 Z의 활성값(Z.float()에서 float32로 계산)의 곱을 float32로 "
    "계산해 한 번 {dtype} 값으로 바꿉니다.",
    "precision.gated_naive": "Z의 활성값을 {dtype} 값으로 반올림하고, N과의 곱을 {dtype} 값으로 "
    "반올림합니다.",
    "precision.policy.lightning.eager": "transformers의 MiniMax 라이트닝 어텐션처럼 {dtype} "
    "정밀도로 계산했습니다. 아무것도 float32로 바꾸지 않으므로 상태는 {dtype} 값으로 두고, "
    "단계마다 곱과 합을 {dtype} 값으로 반올림합니다(행렬곱은 먼저 float32로 더합니다). 헤드 "
    "전체에 대한 RMSNorm만 float32로 계산합니다. 단계마다 float64 쌍둥이를 옆에 보입니다.",
    "precision.policy.lightning.eager_fp8": "FP8 곱으로 계산했습니다. X와 가중치는 텐서마다 배율 "
    "하나를 두고 {dtype} 값으로 저장하고, 투영은 float32로 더해 float32로 둡니다. 그 뒤 층의 모든 "
    "단계(상태, 출력, 정규화)를 float32로 계산해 float32로 둡니다. 단계마다 float64 쌍둥이를 옆에 "
    "보입니다.",
    "precision.policy.lightning.naive": "손으로 짠 층처럼 업캐스트 없이 {dtype} 정밀도로 "
    "계산했습니다. SiLU, 상태, 출력, 헤드 전체에 대한 RMSNorm을 연산마다 {dtype} 값으로 "
    "반올림합니다. 단계마다 float64 쌍둥이를 옆에 보입니다.",
    "precision.lightning_weights_shown": "층은 W를 만들지 않습니다. 여기서는 {dtype} 계산의 q, "
    "k와 λ로 정확히 계산해 float32로 한 번 반올림한 값을, 출력 옆에서 읽으라고 보입니다(뒤의 어떤 "
    "단계도 읽지 않습니다). 이 단계의 수와 마지막 자리 단위는 float32의 것입니다.",
    "precision.silu_naive": "{dtype} 텐서로 짰습니다. −x, e^(−x), 1 + e^(−x), 나눗셈을 각각 "
    "{dtype} 값으로 반올림합니다.",
    "precision.lightning_state": "MiniMax의 층이 두는 대로 상태를 {dtype} 값으로 둡니다(아무것도 "
    "float32로 바꾸지 않습니다). 비율 r {ratio}({dtype} 정밀도의 e^(−λ): λ를 {dtype} 값으로 "
    "반올림하고 그 e^도 반올림), k_t·v_tᵀ, r·S_(t−1), 합을 토큰마다 각각 {dtype} 값으로 "
    "반올림합니다.",
    "precision.lightning_read": "o_t = q_t·S_t를 torch.matmul이 {dtype} 정밀도로 계산하듯이: "
    "곱을 float32로 더해 한 번 {dtype} 값으로 반올림합니다. MiniMax가 디코딩할 때 토큰마다 "
    "따르는 순환 경로입니다.",
    "precision.lightning_blocked": "MiniMax가 프롬프트를 {dtype} 정밀도로 계산하는 블록 형태: "
    "감쇠는 λ에서 float32로 만들어 {dtype} 값으로 저장하고(층의 버퍼), 행렬곱은 float32로 더해 "
    "{dtype} 값으로 반올림하며, 원소별 곱, 합, 블록 사이로 넘기는 상태를 각각 {dtype} 값으로 "
    "반올림합니다. {dtype} 정밀도에서는 아래 출력과 같지 않을 수 있습니다. 두 형태는 다른 곳에서 "
    "반올림합니다.",
    "precision.lightning_rms_eager": "MiniMaxRMSNorm처럼: 헤드 출력을 나란히 놓고 float32로 "
    "mean(x²)와 √(mean + ε)를 계산합니다(층은 그 역수를 곱합니다). 이 단계의 수와 마지막 자리 "
    "단위는 float32의 것이고, 출력은 {dtype} 값이었습니다.",
    "precision.lightning_rms_naive": "{dtype} 텐서로 짰습니다. x², 평균, 평균 + ε, 제곱근을 각각 "
    "{dtype} 값으로 반올림합니다.",
    "precision.lightning_apply_eager": "MiniMaxRMSNorm처럼: out과 1/r의 곱을 float32로 계산해 "
    "{dtype} 값으로 바꾼 뒤, 가중치({dtype} 값)와의 곱을 {dtype} 값으로 반올림합니다.",
    "precision.lightning_apply_naive": "{dtype} 텐서로 짰습니다. out / r을 반올림하고, 가중치와의 "
    "곱을 {dtype} 값으로 반올림합니다.",
    "precision.index_scores_eager": "transformers의 DeepseekV32Indexer가 CPU에서 {dtype} "
    "q_I와 k_I로 계산하듯이: q.float() @ k.float()에 1/√D를 곱하고 ReLU를 거친 뒤, 가중치 "
    "w.float()에 1/√H_I를 곱해 인덱스 헤드에 걸쳐 더하며, 모두 float32로 계산하므로 점수는 "
    "float32에 머뭅니다(DeepSeek의 커널은 FP8로 점수를 매기지만 transformers는 그 단계를 "
    "건너뜁니다). 이 단계의 수와 마지막 자리 단위는 float32의 것입니다.",
    "precision.index_scores_naive": "{dtype} 텐서로 짰습니다. 헤드마다 q·k(float32로 누적), "
    "1/√D를 곱한 값, 1/√H_I를 곱한 가중치, 인덱스 헤드에 걸친 합을 각각 {dtype} 값으로 "
    "반올림합니다.",
    "precision.mask_wide": "가려진 칸에는 float32 점수에 다음 값을 float32로 더합니다: "
    "{fill}({dtype}의 가장 작은(가장 음수인) 유한수, 모델의 덧셈 마스크). 점수는 float32 값으로 "
    "남습니다.",
    "precision.selection_same": "{dtype} 정밀도에서도 모든 Query가 float64 쌍둥이와 같은 Key를 "
    "남깁니다.",
    "precision.selection_changed": "{dtype} 정밀도에서 top-k가 float64 쌍둥이와 다른 Key를 "
    "남기는 Query 수: {count}(각각 쌍둥이가 남긴 Key → {dtype} 계산이 대신 남긴 Key): {rows}. "
    "반올림이 점수를 경계 너머로 옮겼거나 같게 만들었습니다(같으면 qkvcalc는 앞선 Key를 남기고, "
    "torch.topk는 어느 쪽을 남길지 보장하지 않습니다). 아래 모든 헤드의 마스크는 모델처럼 {dtype} "
    "계산의 선택을 적용하므로, 그 행들은 쌍둥이와 다른 Key에 어텐션합니다.",
    "precision.fp8_kept_layer": "FP8 정책은 이 단계를 float32로 둡니다. 수는 float32의 것이고, "
    "오차는 각 수의 크기에서 {dtype}의 마지막 자리 단위로 셉니다. 이 층에서는 주어진 것(X, 가중치, "
    "매개변수)만 {dtype} 값으로 저장하고, 그것으로 계산하는 단계는 모두 float32로 계산해 float32로 "
    "둡니다.",
    "precision.softcap_reached": "정확히 ±{cap}인 칸: {count}개({dtype} 값에서 tanh가 ±1로 "
    "반올림됨). {dtype} 값에서는 float64에서처럼 한계에 가까워지기만 하는 게 아니라 한계에 "
    "닿습니다.",
    "precision.sinks_eager": "gpt-oss의 eager 어텐션처럼: σ({dtype} 값인 파라미터)가 행에 붙고, "
    "행의 최댓값을 {dtype} 값으로 빼서 반올림한 뒤, softmax(…, dtype={dtype})가 안에서 그 e^를 "
    "float32로 구하고 float32로 더해 가중치만 반올림합니다.",
    "precision.softmax_inside": "torch의 softmax는 이것을 안에서 float32로 계산하고 따로 두지 "
    "않습니다. 이 단계의 수와 ulp는 float32 기준입니다.",
    "precision.temperature": "Llama 4가 Query를 배율 조정하듯: τ는 float32, q × τ도 float32로 "
    "계산해 {dtype} 값으로 한 번 반올림합니다.",
    "precision.temperature_naive": "{dtype} 텐서로 짠 계산: τ를 {dtype} 값으로 반올림한 뒤 q × "
    "τ를 {dtype} 값으로 반올림합니다.",
    "precision.layernorm_eager": "CPU의 F.layer_norm처럼(StableLM, Phi의 q/k 노름): float32로 μ와 "
    "r = 1/√(mean((x − μ)²) + ε)를 구하고, x·r + (−r·μ), 가중치와의 곱, 편향의 덧셈(파라미터는 "
    "{dtype} 값)을 각 단계 float32로 반올림한 뒤 결과를 {dtype} 값으로 한 번 반올림합니다.",
    "precision.layernorm_naive": "업캐스트 없이 {dtype} 텐서로 짠 계산: μ, x − μ, 그 제곱, 그 "
    "평균, + ε, 제곱근, 나눗셈, 가중치와의 곱, 편향의 덧셈을 각각 {dtype} 값으로 반올림합니다.",
    # ---- command line -------------------------------------------------------------------
    "cli.preset_unknown": "프리셋을 찾을 수 없습니다: {name!r}. 있는 프리셋: {names}",
    "cli.presets_missing": "이 설치에는 프리셋 폴더가 없습니다({path}). qkvcalc를 다시 설치하세요",
    "cli.preset_unknown_suggest": "프리셋을 찾을 수 없습니다: {name!r}. 혹시 "
    "{suggestion!r}인가요? (qkvcalc presets로 목록을 볼 수 있습니다)",
    "cli.two_sources": "입력은 하나만 주세요. 함께 주어진 입력: {sources}",
    "cli.two_losses": "손실 옵션은 하나만 주세요. 함께 주어진 옵션: {options} (각각 기울기가 "
    "시작할 곳을 정합니다: --grad-output은 dL/dO, --target은 T, --attend는 Key)",
    "cli.usage_error": "오류: {message}",
    "cli.try_help": "도움말: '{command} {option}'",
    "cli.no_such_option": "이런 옵션은 없습니다: {name}",
    "cli.possible_options": "(가능한 옵션: {names})",
    "cli.invalid_value": "{name}의 값이 올바르지 않습니다: {message}",
    "cli.invalid_value_unnamed": "값이 올바르지 않습니다: {message}",
    "cli.not_one_of": "{value}: {choices} 중 하나여야 합니다.",
    "cli.not_a_valid": "{value}: 올바른 {kind} 값이 아닙니다.",
    "cli.kind.int": "정수",
    "cli.kind.int_range": "정수",
    "cli.kind.float": "실수",
    "cli.kind.float_range": "실수",
    "cli.not_in_range": "{value}: 허용 범위 {range} 밖입니다.",
    "cli.missing_argument": "인자가 빠졌습니다: {name}",
    "cli.missing_option": "옵션이 빠졌습니다: {name}",
    "cli.missing_parameter": "값이 빠졌습니다: {name}",
    "cli.choose_from": "다음 중에서 고르세요:\n\t{choices}",
    "cli.option_needs_value": "{name} 옵션에는 값이 하나 필요합니다.",
    "cli.option_needs_values": "{name} 옵션에는 값 {count}개가 필요합니다.",
    "cli.extra_arguments": "예상하지 못한 인자가 더 있습니다: {args}",
    "cli.no_such_command": "이런 명령은 없습니다: {name}",
    "cli.interrupted": "중단됨",
    "cli.stdout_failed": "표준 출력에 쓸 수 없습니다: {reason}",
    "cli.error_prefix": "오류",
    # ---- torch script (issue 3) ---------------------------------------------------------
    "ui.heads_group_kv": "헤드 {head} (전체 {heads}개) · Key/Value 헤드 {kv_head} 사용 "
    "(공유: Query 헤드 {first}–{last})",
    "ui.concat_span": "헤드 {head} → {cols}",
    "note.concat_columns": "이어 붙인 결과의 열, 헤드별: {spans}.",
    "note.cross_axes": "행은 X에서 온 Query(n = {n}), 열은 소스에서 온 Key(m = {m})입니다. "
    "크로스 어텐션의 어텐션 스코어는 n×m이며, n과 m이 같을 필요는 없습니다.",
    # ---- exports: markdown, latex, html, svg (issue 4) ------------------------------------
    "export.hangul_without_kotex": "[한국어 글: kotex가 설치되어 있지 않습니다]",
    "export.title": "어텐션, 한 단계씩",
    "export.rows": "행: {labels}.",
    "export.cols": "열: {labels}.",
    "export.output_unwritable": "파일을 쓸 수 없습니다: {path} ({reason})",
    "export.output_extension": "--output {path}: 확장자 {ext}에 해당하는 형식이 없습니다. "
    "{known} 중 하나를 쓰거나 --format으로 형식을 고르세요",
    "export.unknown_format": "없는 형식: {format}. 형식: {known}",
    # ---- step mode (issue 4) ------------------------------------------------------------
    "step.option_help": "먼저 문제를 보여 주고, 터미널에서 한 번에 한 단계씩 보여 줍니다. "
    "다음: Enter, Space, →; 이전: b, ←; 스크롤: ↓ ↑ j k PgDn PgUp; 단계 번호를 치고 Enter: 그 "
    "단계로 이동; Home, End; n, p: 다음·이전 헤드; ?: 모든 키; 끝내기: q.",
    "step.header": "{total}단계 중 {number}단계 — {formula}",
    "step.header_head": "{total}단계 중 {number}단계 — {formula} · 헤드 {head}",
    "step.header_pair": "{total}단계 중 {number}단계 — {formula} · 쌍 {pair}",
    "step.keys": "→ 다음 · ← 이전 · ↓↑ 스크롤 · ? 키 · q 끝내기",
    "step.done": "{total}개 단계를 모두 보았습니다. 결과:",
    # ---- step mode, round two (issue 17) --------------------------------------------------
    "step.problem_header": "문제 — 이어서 {total}개 단계",
    "step.intro_next": "Enter나 →: {total}단계 중 1단계로 갑니다. 단계 번호를 치고 Enter를 누르면 "
    "그 단계로 바로 갑니다. ?: 모든 키를 보여 줍니다.",
    "step.lines": "↕ {first}–{last}/{total}줄",
    "step.jump": "{typed}단계로 이동… (Enter)",
    "step.jump_bad": "{typed}단계는 없습니다. 단계는 1부터 {total}까지입니다",
    "step.one_head": "n과 p는 헤드 사이를 오가는 키인데, 이 문제의 헤드는 하나입니다",
    "step.help_title": "키",
    "step.help": "Enter, Space, →     다음 단계\n"
    "b, ←                이전 단계\n"
    "↓ ↑, j k            긴 단계를 한 줄씩 스크롤\n"
    "PgDn PgUp           한 화면씩 스크롤\n"
    "12 Enter            12단계로 이동\n"
    "Home, End           문제, 마지막 단계\n"
    "n, p                다음 헤드, 이전 헤드\n"
    "?                   이 키 목록\n"
    "q, Esc              끝내기 (Ctrl-C도 됩니다)",
    "step.help_close": "아무 키나 누르면 단계로 돌아갑니다.",
    "studio.inputs": "문제: 수를 입력하고 Enter (또는 칸을 떠나기)",
    "studio.options": "옵션 (JSON 또는 단어; 비우면 빠집니다)",
    "studio.part": "행 {rows}, 열 {cols} 표시 중 (화살표 키로 나머지를 불러옵니다)",
    "studio.input_cell": "{cell} = {value}: Enter를 누르거나 칸을 떠나면 모든 단계를 다시 "
    "계산합니다",
    "studio.option_cell": "옵션 {name}: Enter를 누르거나 칸을 떠나면 모든 단계를 다시 계산합니다",
    "studio.no_arithmetic": "{name}[{i},{j}] = {value}: 이 단계의 칸에는 따로 쓸 계산이 "
    "없습니다 (다른 단계에서 읽거나 옮겨 온 값입니다)",
    "studio.was": "(이전 값 {old})",
    "studio.changed": "마지막 수정으로 바뀐 칸: {cells}",
    "studio.more": "외 {count}개",
    "studio.status": "단계 {number}/{total} · ? 키 목록 · Ctrl+Q 종료",
    "studio.saved": "문제를 {path}에 저장했습니다.",
    "studio.nothing_to_undo": "되돌릴 수정이 없습니다.",
    "studio.keys": "Tab, Shift+Tab      다음 또는 이전 칸\n"
    "↑ ↓ ← →             행렬의 칸 사이 이동\n"
    "Enter               다시 계산 (칸을 떠나도 됩니다)\n"
    "Esc                 칸에서 나가기: 아래 키가 동작합니다\n"
    "Enter, Space, →     다음 단계\n"
    "b, ←                이전 단계\n"
    "Home, End           첫 단계, 마지막 단계\n"
    "n, p                다음 또는 이전 헤드\n"
    "↓ ↑, j k            단계 스크롤\n"
    "Ctrl+Z              마지막 수정 되돌리기\n"
    "s                   문제를 JSON으로 저장\n"
    "?                   이 키 목록\n"
    "q, Ctrl+Q           종료 (q는 칸에 포커스가 없을 때)",
    "studio.serving": "스튜디오를 http://{host}:{port}에서 제공합니다. Ctrl+C로 멈춥니다.",
    "studio.serving_local": "이 컴퓨터에서만 열 수 있습니다 ({host}: 이 컴퓨터 자신의 주소).",
    "studio.serving_open": "{port}번 포트로 이 컴퓨터에 닿을 수 있는 누구나 열어서 이 컴퓨터에서 "
    "스튜디오를 실행할 수 있습니다: 이 컴퓨터의 모든 주소가 수신 중입니다 ({host}).",
    "studio.serving_host": "{port}번 포트로 {host}에 닿을 수 있는 누구나 열어서 이 컴퓨터에서 "
    "스튜디오를 실행할 수 있습니다.",
    "studio.serve_missing": "--serve에는 textual-serve가 필요한데 설치되어 있지 않습니다: "
    "pip install 'qkvcalc[serve]'",
    "studio.no_terminal": "qkvcalc studio는 터미널에서 키를 읽고 그 위에 화면을 그리는데, 지금은 "
    "연결된 터미널이 없습니다 (/dev/tty 없음). 터미널에서 실행하거나, --serve를 붙여 브라우저에서 "
    "여세요",
    "studio.stdin": "qkvcalc studio는 키를 터미널에서 읽으므로(--serve는 브라우저마다 새로 "
    "시작합니다) 문제를 표준 입력이 아닌 파일이나 프리셋에서 받습니다",
    "quiz.answer_too_long": "{limit}자가 넘는 입력 줄은 답으로 읽지 않습니다. 그 뒤는 읽지 "
    "않았습니다",
    "quiz.answer_not_utf8": "입력한 줄이 UTF-8 텍스트가 아니어서 읽을 수 없습니다",
    "quiz.no_terminal": "문제를 표준 입력으로 받았으므로 답은 터미널에서 읽어야 하는데, 지금은 "
    "연결된 터미널이 없습니다. 문제를 파일이나 --preset으로 주거나, --answers로 답안지를 "
    "채점하세요",
    "step.no_terminal": "--step은 터미널에서 키를 읽는데, 지금은 연결된 터미널이 없습니다 "
    "(/dev/tty 없음). 터미널에서 실행하거나, --step을 빼고 모든 단계를 한 번에 출력하세요",
    "step.with_format": "--step은 터미널에서 표를 한 단계씩 보여 주므로 --format {format} "
    "옵션과 함께 쓸 수 없습니다. 둘 중 하나를 빼 주세요",
    "step.with_output": "--step은 단계를 터미널에 보여 주므로 --output과 함께 쓸 수 없습니다. "
    "파일로 저장하려면 --step을 빼 주세요",
    "explain.worksheet_format": "--worksheet 옵션은 학생이 써 넣도록 계산된 수를 비워 두므로 "
    "사람이 읽는 형식(table, txt, markdown, html, latex, svg)과 함께 씁니다. --format {format} "
    "옵션과는 함께 쓸 수 없습니다. JSON으로 된 빈 답안지: qkvcalc quiz --template",
    # ---- quiz and new (issue 5) ---------------------------------------------------------
    "quiz.intro": "단계마다 손으로 계산해 한 칸씩 입력하세요. 7, -0.5, 7/sqrt(2), 4.95, 4,95처럼 "
    "써도 됩니다. 소수 {precision}자리까지 맞으면 정답입니다. ?: 힌트, Enter나 skip: 건너뛰기, "
    "Ctrl-C: 끝내기(지금까지의 점수를 보여 줍니다).",
    "quiz.random_seed": "무작위 문제, 시드 {seed}. 같은 퀴즈를 다시 풀려면: {command}",
    "quiz.stage_heading": "단계 {number}/{total}: {title}  ·  {formula}  ·  {shape}",
    "quiz.prompt": "{cell} = ",
    "quiz.bad_answer": "{reason}. 다시 입력하세요.",
    "quiz.wrong": "틀렸습니다: {cell} = {expected} (입력: {answer}).",
    "quiz.carried": "{cell}: 이 단계의 계산은 맞으므로 정답으로 셉니다. 앞에서 입력한 답으로 "
    "계산하면 {own}이고 입력({answer})과 같습니다. 참값은 {expected}입니다. 실수는 "
    "{origin}에서 시작되어 여기까지 이어졌습니다.",
    "quiz.stage_score": "{name}: {total}칸 중 {right}칸 정답",
    "quiz.stage_score_carried": "{name}: {total}칸 중 {right}칸 정답(그중 {carried}칸은 앞의 "
    "실수에서 이어받은 값으로 맞게 계산)",
    "quiz.cell_head": "{cell} (헤드 {head})",
    "quiz.score_title": "단계별 점수",
    "quiz.col_stage": "단계",
    "quiz.col_score": "정답",
    "quiz.col_cells": "칸",
    "quiz.legend": "✓ 정답, → 앞의 실수에서 이어받은 값으로 맞게 계산함(정답으로 셈, 값은 "
    "참값과 다름), ✗ 오답, · 미입력",
    "quiz.verdict.right": "정답",
    "quiz.verdict.carried": "이어짐",
    "quiz.verdict.wrong": "오답",
    "quiz.verdict.missing": "미입력",
    "quiz.cells_title": "다시 볼 칸",
    "quiz.detail_wrong": "{cell}: 입력 {answer}, 정답 {expected}",
    "quiz.detail_carried": "{cell}: 이 단계의 계산은 맞음(정답으로 셈). 앞에서 틀린 {origin}의 "
    "값으로 계산했으므로 입력 {answer}, 참값 {expected}",
    "quiz.detail_missing": "{cell}: 답 없음. 정답은 {expected}",
    "quiz.stage_missing": "{key}: 답하지 않음",
    "quiz.all_right": "{total}칸 모두 정답입니다.",
    "quiz.total": "{total}칸 중 {right}칸 정답.",
    "quiz.total_carried": "{total}칸 중 {right}칸 정답. 그중 {carried}칸은 앞의 실수에서 "
    "이어받은 값으로 맞게 계산한 것입니다(값은 참값과 다릅니다).",
    "quiz.in_sheet": "답안지 {origin}에서",
    "quiz.sheet_not_object": '답안지는 단계 id("k", "scores", 헤드 2라면 "2/scores")마다 행렬을 '
    "적은 JSON 객체여야 합니다. 받은 값의 종류: {kind}",
    "quiz.sheet_key": "알 수 없는 단계 {key!r}. 이 문제의 단계: {known}",
    "quiz.sheet_key_suggest": "알 수 없는 단계 {key!r}: 혹시 {suggestion!r}인가요?",
    "quiz.sheet_key_head": "알 수 없는 단계 {key!r}: 이 문제는 헤드가 {heads}개이고, 헤드마다 "
    "단계 앞에 헤드 번호를 붙입니다. 혹시 {suggestion!r}(헤드 1, 헤드 {heads}의 것은 "
    "{last!r})인가요?",
    "quiz.sheet_not_matrix": "{key}: 행렬(숫자 행들의 리스트)이어야 합니다. 받은 값: {value}",
    "quiz.sheet_shape": "{key}의 모양은 {shape}인데, 이 문제에서 그 단계는 {rule} = "
    "{expected}입니다",
    "quiz.stage_head": "--stages {name}: 빗금 앞의 헤드는 2/scores처럼 자연수입니다",
    "quiz.stage_no_place": "--stages {name}: 이 문제의 {sid}에는 그런 단계나 블록이 없습니다. "
    "있는 것은 {places}입니다 (@s2: 디코딩 단계 2, @b2: Key 블록 2)",
    "quiz.stage_no_places": "--stages {name}: 이 문제의 {sid} 단계는 디코딩 단계나 Key 블록으로 "
    "나뉘지 않습니다. {bare} 형태로 고르세요",
    "quiz.stage_unknown": "--stages: 없는 단계 {name!r}. {known} 중에서 고르세요 (2/scores: 헤드 "
    "2만)",
    "quiz.stage_unknown_suggest": "--stages: 없는 단계 {name!r}. {close!r} 단계를 뜻했나요? "
    "{known} 중에서 고르세요 (2/scores: 헤드 2만)",
    "quiz.stage_one_head": "--stages {name}: 이 문제는 헤드가 하나뿐이라 단계에 헤드 번호가 "
    "붙지 않습니다. 다음처럼 쓰세요: {sid}",
    "quiz.stage_no_head": "--stages {name}: 이 문제에는 {head}번 헤드가 없습니다. 헤드는 "
    "1부터 {heads}까지입니다",
    "quiz.stages_none": "--stages {names}: 이 문제에는 이 중 어느 단계도 없습니다. 이 문제의 "
    "단계: {known}",
    "quiz.no_problem": "풀 문제가 없습니다. --preset NAME, JSON 파일(표준 입력은 -), --random 중 "
    "하나를 주세요 (예: qkvcalc quiz --preset doc)",
    "quiz.random_with_source": "--random은 문제를 스스로 만들므로 다음을 빼세요: {given}",
    "quiz.seed_without_random": "--seed와 --size는 무작위 문제를 정하는 옵션입니다. --random을 "
    "추가하세요",
    "quiz.stdin_twice": "문제와 답안지를 둘 다 표준 입력으로 받을 수는 없습니다. 하나는 파일로 "
    "주세요",
    "quiz.json_needs_answers": "--format json은 채점할 답안지를 위한 형식입니다. --answers FILE을 "
    "추가하세요",
    "quiz.size": "--size {text!r}: 토큰 수와 폭을 n,d 꼴로 쓰세요(예: 3,2). 각각 1부터 "
    "{limit}까지입니다",
    "quiz.seed": "--seed {seed}: 시드는 0부터 {limit}까지의 정수입니다",
    # ---- the backward pass in the quiz and exports (issue 21) ----
    "help.quiz.backward": "순전파 대신 역전파를 묻습니다. 기본으로 묻는 단계는 grad_v, "
    "grad_weights, 소프트맥스 역전파의 로짓 기울기, grad_scores, grad_q, grad_k, grad_wq 가운데 "
    "문제에 있는 것입니다(attend에서는 V가 그 손실에 닿지 않아 grad_v가 없습니다). --stages로 "
    "다른 단계도, 순전파 단계도 고를 수 있습니다. 기울기는 문제의 grad_output, target, attend에서 "
    "시작하며, 퀴즈는 첫 질문 전에 그것을 A, O, (있으면) dO와 함께 보여 줍니다.",
    "hint.grad_v": "{cell} = Σₜ A[t,{i}]·dO[t,{j}]: A의 열 {i}(Aᵀ의 행 {i}) 곱하기 dO의 열 "
    "{j}, 짝끼리 곱해 더합니다.",
    "hint.grad_weights": "{cell}: dO의 행 {i} 곱하기 V의 행 {j}(Vᵀ의 열 {j}), 짝끼리 곱해 "
    "더합니다.",
    "hint.grad_attend": "{cell} = −1 / A[{i},{j}]입니다(Query {i}의 목표가 Key {j}일 때). 그 "
    "밖에는 0입니다.",
    "hint.grad_rowdot": "{cell} = Σⱼ A[{i},j]·dA[{i},j]: A의 행 {i} 곱하기 dA의 행 {i}, "
    "짝끼리 곱해 더합니다.",
    "hint.grad_softmax": "{cell} = A[{i},{j}]·(dA[{i},{j}] − r[{i}]): 행 {i}의 행 항 r을 "
    "먼저 뺍니다.",
    "hint.grad_q_side": "{cell}: d(Q·Kᵀ)의 행 {i} 곱하기 {k}의 열 {j}, 짝끼리 곱해 더합니다.",
    "hint.grad_k_side": "{cell} = Σₜ d(Q·Kᵀ)[t,{i}]·{q}[t,{j}]: d(Q·Kᵀ)의 열 {i} 곱하기 {q}의 열 "
    "{j}, 짝끼리 곱해 더합니다.",
    "hint.grad_weight": "{cell}: {x}의 열 {i} 곱하기 d{p}의 열 {j}(헤드들을 나란히 놓은 것), "
    "Σₜ {x}[t,{i}]·d{p}[t,{j}].",
    "hint.grad_weight_torch": "{cell}: d{p}의 열 {i}(헤드들을 나란히 놓은 것) 곱하기 {x}의 "
    "열 {j}. 저장 방식이 out × in이라 전치되어 있습니다.",
    "hint.grad_input": "{cell}: 모든 경로에서 칸 [{i},{j}]의 값을 더합니다. {terms}.",
    "hint.grad_input_one": "{cell}: 경로가 하나뿐이므로, 그 경로의 칸 [{i},{j}]입니다. {terms}.",
    "mistake.grad_v_not_transposed": "A·dO를 계산했습니다. 출력이 A·V였으므로 V의 기울기는 "
    "다른 인수를 전치한 것입니다: dV = Aᵀ·dO(A의 열 i와 dO의 곱).",
    "mistake.softmax_back_no_row_term": "A ⊙ dA를 계산했습니다. 가중치 하나만 따로 움직이는 "
    "것처럼 계산한 것입니다. 로짓 하나를 키우면 그 행의 다른 가중치가 모두 줄어들므로 행 항을 "
    "먼저 뺍니다: dS = A ⊙ (dA − r), rᵢ = Σⱼ Aᵢⱼ·dAᵢⱼ.",
    "mistake.grad_scale_missing": "{grad}의 값을 스케일링된 스코어의 기울기에서 "
    "계산했습니다. 스코어는 스케일링에서 {scale}배가 되었으므로, d(Q·Kᵀ)는 먼저 그 기울기를 "
    "{scale}배 한 것입니다.",
    "mistake.grad_path_forgotten": "경로 하나가 빠졌습니다. {x}의 값은 그것을 읽는 모든 선형 "
    "투영을 거쳐 손실에 닿고, 연쇄 법칙은 그 경로를 모두 더합니다. 빠진 경로: {path}.",
    "hint.grad_back": "{cell}: {rule}의 칸 [{i},{j}]입니다. 기울기 {out}에서 이 단계를 거슬러 "
    "역전파한 값입니다.",
    # ---- quiz, round two (issue 17): named mistakes, unreadable cells, hints ------------
    "mistake.weight_transposed": "이 값은 {x}·{w}ᵀ입니다. 행 벡터 규칙에서는 전치 없이 "
    "{name} = {x}·{w}입니다. {w}의 j번째 열이 {name}의 j번째 열을 만듭니다.",
    "mistake.weight_torch_layout": "이 값은 적힌 그대로의 {x}·{w}입니다. 이 문제는 가중치를 "
    "PyTorch가 저장하는 모양(out×in, layout torch)으로 주므로 {name} = {x}·{w}ᵀ입니다.",
    "mistake.kt_not_transposed": "이 값은 K 그대로입니다. Kᵀ는 K를 전치한 것이라, K의 j번째 "
    "행이 Kᵀ의 j번째 열이 됩니다.",
    "mistake.k_not_transposed": "이 값은 Q·K입니다. 스코어는 Query i와 Key j의 내적 q_i·k_j, "
    "곧 Q의 i번째 행과 Kᵀ의 j번째 열의 곱이므로 스코어는 Q·Kᵀ입니다.",
    "mistake.scores_transposed": "이 값은 스코어를 전치한 K·Qᵀ입니다. Q·Kᵀ에서 i번째 행은 "
    "Query i의 것이고, j번째 열은 Key j의 것입니다.",
    "mistake.scale_sqrt_d_model": "이 값은 Q·Kᵀ / √d_model = Q·Kᵀ / {model_root}입니다. "
    "스케일링에는 헤드마다의 Query·Key 폭(d_k = {d_k})을 쓰므로 Q·Kᵀ / √d_k = Q·Kᵀ / {root}"
    "입니다.",
    "mistake.scale_sqrt_d_model_or_d_k": "이 값은 Q·Kᵀ / √d_model = Q·Kᵀ / {model_root}"
    "입니다(여기서는 d_k로 나눈 것과 같습니다). 스케일링에는 헤드마다의 Query·Key 폭 "
    "d_k = {d_k}의 제곱근을 쓰므로 Q·Kᵀ / √d_k = Q·Kᵀ / {root}입니다.",
    "mistake.scale_d_k": "이 값은 Q·Kᵀ / d_k = Q·Kᵀ / {d_k}입니다. 나누는 값은 d_k의 "
    "제곱근이므로 Q·Kᵀ / √d_k = Q·Kᵀ / {root}입니다.",
    "mistake.scale_missing": "이 값은 스케일링하지 않은 Q·Kᵀ입니다. 모든 스코어를 "
    "√d_k = {root}(d_k = {d_k}) 값으로 나눠야 합니다.",
    "mistake.scale_missing_given": "이 값은 스케일링하지 않은 Q·Kᵀ입니다. 이 문제는 "
    "scale = {scale} 값을 주므로 모든 스코어에 그 값을 곱합니다.",
    "mistake.scale_multiplied": "이 값은 Q·Kᵀ · √d_k입니다. 스코어는 √d_k = {root} 값으로 "
    "나누는 것이지 곱하는 것이 아닙니다.",
    "mistake.mask_missing": "마스크가 빠졌습니다. 마스킹되는 Query–Key 쌍이 {count}개 있고, "
    "마스킹된 스코어는 소프트맥스 전에 −∞가 되어 가중치가 0이 됩니다.",
    "mistake.mask_inverted": "마스크를 반대로 읽었습니다. 1 / true는 어텐션 허용(PyTorch "
    "scaled_dot_product_attention의 규칙)이고, 0은 마스킹(−∞)입니다.",
    "mistake.mask_inverted_causal": "인과(causal) 마스크를 뒤집었습니다. Query i는 Key 1…i"
    "(자기 자신과 과거)만 볼 수 있고 미래는 볼 수 없으므로, 대각선 위쪽의 쌍이 −∞가 됩니다.",
    "mistake.exp_not_shifted": "이 값은 e^s입니다. 이 단계에서는 먼저 각 행의 최댓값을 빼서 "
    "e^(s − 행 최댓값)을 계산합니다. 가중치는 같고, e^s는 오버플로할 수 있지만 "
    "e^(s − 행 최댓값)은 1을 넘지 않아 오버플로하지 않습니다.",
    "mistake.softmax_columns": "열 방향으로 소프트맥스를 계산했습니다. 소프트맥스는 각 행을 "
    "따라(Query 하나에 대해 모든 Key에 걸쳐) 계산하므로 A의 각 행의 합이 1입니다.",
    "mistake.softmax_columns_empty": "열 방향으로 소프트맥스를 계산했습니다. 소프트맥스는 각 "
    "행을 따라(Query 하나에 대해 모든 Key에 걸쳐) 계산하므로 A의 각 행의 합이 1입니다. 다만 Key가 "
    "모두 마스킹된 행은 전부 0입니다(이 A에도 그런 행이 있습니다).",
    "mistake.heads_averaged": "헤드 {heads}개를 평균했습니다. 헤드들의 출력은 나란히 이어 "
    "붙이므로(헤드 1의 열부터) concat의 모양은 {shape}입니다.",
    "mistake.softcap_inner_missing": "이 값은 c·tanh(S) = {cap}·tanh(S)입니다. tanh 안에서 "
    "스코어를 c로 나눠 c·tanh(S / c)를 계산하므로, 작은 스코어는 거의 그대로 지나갑니다.",
    "mistake.softcap_outer_missing": "이 값은 −1과 1 사이의 tanh(S / c)입니다. softcap은 "
    "tanh에 다시 c를 곱해(c = {cap}) c·tanh(S / c)를 계산하므로, 로짓은 −c와 c 사이에 "
    "놓입니다.",
    "mistake.rope_other_pairing_half": "이 값은 이웃한 두 차원(2i와 2i+1)을 함께 회전한 "
    '값입니다. 이 문제의 RoPE에서 차원 i의 짝은 i + {half}입니다(style "half", rotate_half).',
    "mistake.rope_other_pairing_pairs": "이 값은 차원 i를 {half}만큼 떨어진 차원(i + "
    "{half})과 짝지어(rotate_half) 회전한 값입니다. 이 문제의 RoPE는 이웃한 두 차원, 2i와 "
    '2i+1을 함께 회전합니다(style "pairs").',
    "mistake.rope_turned_back": "이 값은 각 쌍을 −φ만큼 회전한 값입니다. RoPE는 양의 "
    "방향으로 φ = 위치 × ω만큼 회전합니다: a′ = a·cos φ − b·sin φ, b′ = b·cos φ + a·sin φ.",
    "mistake.alibi_sign": "이 값은 +slope·|i − j|입니다. ALiBi는 거리를 뺍니다: "
    "B = −{slope}·|i − j|.",
    "mistake.alibi_signed_distance": "이 값은 절댓값 없이 −slope·(i − j)를 계산했습니다. "
    "ALiBi는 거리 |i − j|를 쓰므로, Query 뒤에 있는 Key도 같은 거리만큼 앞에 있는 Key와 "
    "똑같이 불이익을 받습니다.",
    "mistake.sink_max_forgotten": "이 값은 스코어의 최댓값만 빼서 구한 값입니다. 싱크가 있으면 "
    "행 최댓값은 스코어와 싱크를 함께 본 m = max(max_j s_j, σ)이므로 e^(σ − m)도 1을 넘지 "
    "않습니다(가중치는 같게 나옵니다).",
    "mistake.sink_left_out": "이 값은 싱크를 뺀 소프트맥스입니다. 싱크의 e^(σ − m)도 각 행의 "
    "합 Σ_j e^(s_j − m) + e^(σ − m)에 들어가므로, 한 행의 가중치 합은 1보다 작습니다(나머지는 "
    "싱크가 가져갑니다).",
    "mistake.norm_weight_missing": "이 값은 가중치를 곱하지 않은 x / RMS(x)입니다. RMSNorm은 "
    "그다음 각 차원 j에 가중치 w_j를 곱합니다.",
    "mistake.norm_sum_not_mean": "이 값은 행의 길이 √(Σ x²)로 나눴습니다. RMSNorm은 평균의 "
    "제곱근 √(mean(x²) + ε)로 나누며, 평균은 d_k = {d_k}개 차원에 걸쳐 냅니다.",
    "quiz.mistakes_title": "알아낸 실수",
    "quiz.mistake_line": "{stage}: {text}",
    "quiz.verdict.unreadable": "읽을 수 없음",
    "quiz.detail_unreadable": "{cell}: {text} — 읽을 수 없습니다 ({reason}). 정답 {expected}",
    "quiz.legend_unreadable": "? 읽을 수 없음",
    "answer.comma_ambiguous": "{field}: {text!r} — 소수점 쉼표로 읽으면 {decimal}, 천 단위 "
    "구분 기호로 읽으면 {thousands}입니다. {decimal} 또는 {thousands}처럼 써 주세요",
    "quiz.skipped": "{cell} 건너뜀: 정답 {expected}.",
    "quiz.hint": "힌트: {rule}",
    "quiz.interrupted_score": "중단했습니다. 지금까지의 점수:",
    "hint.proj": "{cell}: {x}의 {i}번째 행과 {w}의 {j}번째 열을 성분끼리 곱해 더합니다.",
    "hint.proj_bias": "{cell}: {x}의 {i}번째 행과 {w}의 {j}번째 열을 성분끼리 곱해 더하고, "
    "{b}의 {j}번째 값을 더합니다.",
    "hint.kt": "{cell} = K[{j},{i}]: Kᵀ는 행과 열을 맞바꿉니다.",
    "hint.scores": "{cell} = q_{i}·k_{j}: Q의 {i}번째 행과 Kᵀ의 {j}번째 열(K의 {j}번째 행)을 "
    "성분끼리 곱해 더합니다.",
    "hint.scaled": "{cell} = Q·Kᵀ[{i},{j}] {op}.",
    "hint.masked": "{cell}: 마스크의 (Query {i}, Key {j}) 칸이 1이면 {src}[{i},{j}], 0이면 "
    "−∞입니다.",
    "hint.exp": "{cell} = e^({src}[{i},{j}] − {src}의 {i}번째 행의 최댓값).",
    "hint.formula": "{cell}: {formula}의 [{i},{j}] 칸입니다.",
    "hint.x_pe": "{cell} = X[{i},{j}] + PE[{i},{j}].",
    "hint.rmsnorm": "{cell} = {src}[{i},{j}] / √({src}의 {i}번째 행의 제곱 평균 + ε) × w[{j}].",
    "hint.rope": "{cell}: {src}의 {i}번째 행의 {j}번 차원을 짝 차원과 함께 φ = 토큰 {i}의 위치 × "
    "그 짝의 주파수만큼 회전합니다: a·cos φ − b·sin φ(짝의 첫째) 또는 b·cos φ + a·sin φ(둘째).",
    "hint.alibi": "{cell} = −경사 × |Query {i}의 위치 − Key {j}의 위치|.",
    "hint.biased": "{cell} = S[{i},{j}] + B[{i},{j}].",
    "hint.capped": "{cell} = c·tanh({src}[{i},{j}] / c), c = {cap}.",
    "hint.sink_exp": "{cell} = e^({src}[{i},{j}] − m), m은 {src}의 {i}번째 행과 σ 가운데 최댓값; "
    "마지막 열은 e^(σ − m)입니다.",
    "hint.weights": "{cell} = E[{i},{j}] / (E의 {i}번째 행의 합).",
    "hint.output": "{cell}: A의 {i}번째 행과 V의 {j}번째 열을 성분끼리 곱해 더합니다.",
    "hint.concat": "{cell}: 헤드 {h} 출력의 {i}번째 행, {c}번째 열입니다. 헤드들을 나란히 이어 "
    "붙입니다.",
    "hint.final": "{cell}: concat의 {i}번째 행과 W_O의 {j}번째 열을 성분끼리 곱해 더합니다"
    "(문제에 b_O가 있으면 b_O[{j}]도 더합니다).",
    "hint.final_concat": "{cell} = concat[{i},{j}]: W_O가 없으므로 이어 붙인 헤드가 그대로 "
    "출력입니다.",
    "quiz.template_with_answers": "--template은 빈 답안지를 출력하므로 --answers와 함께 쓸 수 "
    "없습니다. 둘 중 하나를 빼 주세요",
    "help.quiz.template": "문제의 빈 답안지(--stages의 단계)를 JSON으로 출력합니다. 채운 뒤 "
    "--answers로 채점하세요.",
    "help.explain.random": "작은 정수로 된 새 문제. 같은 --seed와 --size이면 qkvcalc quiz "
    "--random과 같은 문제입니다.",
    "help.explain.seed": "--random과 함께: 매번 같은 문제.",
    "help.explain.size": "--random과 함께: 토큰 수,폭 (기본값 3,2).",
    "explain.random_seed": "무작위 문제, 시드 {seed}. 같은 문제를 다시: qkvcalc explain "
    "--random --seed {seed} --size {size}; 퀴즈로: qkvcalc quiz --random --seed {seed} "
    "--size {size}",
    "new.kv_heads": "Key/Value 헤드 수 G: H = {heads}의 약수이고, H보다 적으면 Query 헤드들이 "
    "K와 V를 함께 씁니다{default}:",
    "new.kv_heads_bad": "{value} — H = {heads}의 약수가 아닙니다. G는 다음 중 하나입니다: "
    "{divisors}.",
    "new.wo_ask": "W_O, 헤드를 이어 붙인 뒤 적용하는 출력 선형 투영: 입력할까요? [Y/n]",
    "new.intro": "새 어텐션 문제를 한 단계씩 만듭니다. 숫자는 3, -0.5, 1/2, sqrt(2)처럼 쓸 수 "
    "있습니다. Enter를 누르면 [대괄호] 안의 값을 쓰고, Ctrl-C를 누르면 저장하지 않고 끝냅니다.",
    "new.tokens": "토큰 수 n{default}:",
    "new.names": "토큰 {n}개의 이름, 공백으로 구분 [{default}]:",
    "new.names_count": "토큰 {n}개에 이름이 {count}개입니다. 이름을 정확히 {n}개 쓰거나, 기본 "
    "이름을 쓰려면 비워 두세요.",
    "new.d_model": "d_model, 각 토큰 벡터의 폭{default}:",
    "new.d_k": "d_k, Query와 Key의 폭 (헤드마다){default}:",
    "new.d_v": "d_v, Value의 폭 (헤드마다){default}:",
    "new.heads": "헤드 수 H{default}:",
    "new.whole_bad": "{value!r}: {low}부터 {high}까지의 정수가 아닙니다.",
    "new.matrix": "{matrix}의 모양은 {rule} = {rows}×{cols}입니다: 숫자 {cols}개짜리 행이 "
    "{rows}개.",
    "new.row": "{matrix}의 {row}행 ({rows}행 중, 숫자 {cols}개):",
    "new.row_length": "{matrix}의 {row}행에 숫자가 {length}개 있지만, {matrix}의 모양은 {rule} = "
    "{rows}×{cols}이므로 행마다 {cols}개가 필요합니다. 그 행을 다시 입력하세요.",
    "new.cell_bad": "{reason}. 그 행을 다시 입력하세요.",
    "new.mask": "마스크: none(없음), causal(인과 마스크), matrix(행마다 직접 입력) [none]:",
    "new.mask_bad": "{value!r}: none(없음), causal(인과 마스크), matrix(행렬) 중 하나를 "
    "입력하세요.",
    "new.mask_row": "마스크 {row}행 ({rows}행 중, 0 또는 1을 {cols}개, 1 = 어텐션 허용):",
    "new.mask_row_bad": "마스크 {row}행에는 값이 {cols}개 필요하고, 각 값은 1(어텐션 허용) 또는 "
    "0(마스킹)입니다. 그 행을 다시 입력하세요.",
    "new.yes_words": "y,yes,예,네,응,ㅇ",
    "new.no_words": "n,no,아니요,아니오,아니,ㄴ",
    "new.yes_no": "y(예) 또는 n(아니요)으로 답하세요.",
    "new.overwrite": "{path} 파일이 이미 있습니다. 덮어쓸까요? [y/N]",
    "new.not_saved": "아무것도 쓰지 않았습니다.",
    "new.saved": "{path}에 저장했습니다.",
    "new.explain_now": "지금 풀이를 볼까요? [Y/n]",
    "new.explain_later": "언제든 풀이 보기: qkvcalc explain {path}",
    "new.ended": "문제를 다 입력하기 전에 입력이 끝났습니다. 아무것도 저장하지 않았습니다",
    # ---- every line adds up (issue 25) ----------------------------------------------------
    "note.geometry_approx": "스코어 하나를 길이와 각도로 보면: {query}·{key} = "
    "|q|·|k|·cos θ = {q_norm} × {k_norm} × {cos} ≈ {value}.",
    "ui.softmax_row_terms": "{row}행 ({token}): 최댓값 = {max}; 지수함수 값의 합 = "
    "{terms}{eq}{sum}",
    # ---- exact (issue 5) ----------------------------------------------------------------
    "note.exact_surd": "d_k = {d_k}의 제곱근은 무리수이므로, 스케일링된 스코어를 정수 ÷ 제곱근 "
    "꼴(예: 7/√2)로 정확히 나타내고 옆에 소수 값을 함께 표시합니다. 학교에서 배우는 유리화된 꼴로 "
    "바꾸려면 분자와 분모에 그 제곱근을 곱하세요: 7/√2 = 7√2/2, 7/√8 = 7√8/8 = 7√2/4.",
    "note.exact_scale_irrational": "scale 값이 무리수({scale})이므로, 스케일링된 스코어는 "
    "소수로 표시합니다.",
    "note.exact_stops_sinks": "여기부터는 소수입니다. 싱크의 e^(σ − m)을 포함해 각 e^(s − m)은 "
    "지수가 0이면 정확히 1(마스킹된 스코어는 0)이고, 그 밖에는 무리수입니다. 0이 아닌 대수적 수 "
    "a에 대해 e^a는 초월수이기 때문입니다(린데만–바이어슈트라스 정리).",
    "note.exact_stops": "여기부터는 소수로 나타냅니다. 스코어가 그 행의 최댓값과 같은 칸의 e^(s − "
    "max)는 정확히 1이고(마스킹된 칸은 0), 나머지는 모두 무리수입니다: 이때 s − max는 0이 아닌 "
    "대수적 수(예: −3/√2)이고, 0이 아닌 대수적 수 a에 대해 e^a는 초월수이기 "
    "때문입니다(린데만–바이어슈트라스 정리). 다만 한 행에서 마스킹되지 않은 스코어가 모두 같으면 "
    "가중치는 유리수입니다: 마스킹되지 않은 Key가 k개면 각각 1/k(하나면 1, 둘이면 각각 "
    "1/2)이지만, 표에는 소수로 나타냅니다.",
    "note.exact_partial": "무리수 입력(제곱근)의 영향을 받는 칸은 소수로 표시합니다.",
    "note.exact_skipped": "정확한 분수 계산을 생략했습니다: 이 문제에는 분수 곱셈이 {count}번 "
    "필요해 한도 {limit}번을 넘습니다. --exact는 손으로 풀 수 있을 만큼 작은 문제를 위한 "
    "옵션입니다.",
    "note.exact_skipped_digits": "정확한 분수 계산을 생략했습니다: 이 숫자들로는 한 칸이 약 "
    "{digits}자리(분자와 분모 합계)까지 커져 한도 {limit}자리를 넘습니다. --exact는 사람이 읽을 "
    "수 있는 숫자를 위한 옵션입니다.",
    "note.exact_skipped_work": "정확한 분수 계산을 생략했습니다: 최대 약 {digits}자리 분수의 "
    "곱셈 {count}번은 너무 오래 걸립니다. --exact는 손으로 풀 수 있을 만큼 작은 문제를 위한 "
    "옵션입니다.",
    # ---- limits and safety (issue 6) ----------------------------------------------------
    "limits.input_elements": "{field}: 숫자 {cols}개짜리 행이 {rows}개여서 입력 전체가 숫자 "
    "{count}개가 되고, 한도 {limit}개보다 많습니다. 정말 필요하면 --max-elements로 한도를 올리세요",
    "limits.stage_elements": "헤드 {heads}개, Query {n}개, Key {m}개라면 단계들이 숫자 "
    "{count}개({gigabytes} GB: 헤드마다 {n}×{m} 스코어 행렬을 하나씩 가지고, 한 헤드를 "
    "계산할 때 그만한 행렬이 네 개 더 필요합니다)를 담아야 해서 "
    "한도 {limit}개보다 많습니다. 토큰이나 헤드를 줄이거나, 정말 필요하면 --max-elements로 한도를 "
    "올리세요",
    "number.too_large": "{field}: {text}: 너무 큰 수입니다. float64로 나타낼 수 있는 수는 1.8e308 "
    "근처까지입니다",
    "input.json_long_number": "JSON을 읽을 수 없습니다: {limit}자리보다 긴 숫자가 있습니다 "
    "(float64는 유효 숫자를 17자리 정도만 담습니다)",
    # ---- command-line help ----------------------------------------------------------------
    "help.app": "Transformer 어텐션을 한 단계씩 풀어 주는 계산기: 모든 단계, 모든 칸의 계산 "
    "과정을 보여 줍니다. 시작하기: qkvcalc explain --preset doc",
    "help.version": "버전을 보여 주고 끝냅니다.",
    "help.lang": "en 또는 ko (기본값: QKVCALC_LANG, LC_ALL, LANG에 따라 정해짐).",
    "help.no_color": "색을 쓰지 않습니다 (환경 변수 NO_COLOR도 같은 효과).",
    "help.panel.source": "문제를 가져올 곳",
    "help.panel.inline": "여기서 입력하는 행렬과 크기",
    "help.panel.modern": "요즘의 어텐션: 위치, 기능, 디코딩, 타일",
    "help.panel.show": "보여 줄 것과 보여 주는 방식",
    "help.panel.display": "언어와 색",
    "help.panel.limits": "읽을 입력의 최대 크기",
    "help.panel.view": "한 번에 한 단계, 일부 단계, 한 헤드",
    "help.panel.given": "모델이 읽을 토큰",
    "help.panel.run": "모델을 실행하는 방식과 결과를 쓸 곳",
    "help.panel.arguments": "인자",
    "help.panel.options": "옵션",
    "help.panel.commands": "명령",
    "help.panel.at": "층",
    "help.panel.shown": "보여 줄 것",
    "help.panel.asked": "퀴즈가 묻는 것과 알려 주는 방식",
    "help.panel.grads": "역전파",
    "help.panel.descent": "경사 하강법",
    "help.panel.precision": "정밀도: 하드웨어가 계산하는 dtype",
    "help.panel.checked": "검사할 것: 내 코드, 또는 문제에 맞춘 내 단계 값",
    "help.panel.runs": "내 코드를 실행하는 방식과 판정을 쓰는 방식",
    "help.panel.serve": "저장, 그리고 브라우저로 스튜디오 제공",
    "help.explain": "문제의 어텐션을 계산하고, 모든 단계를 칸마다의 계산 과정과 함께 보여 줍니다.",
    "help.explain.source": "입력 형식의 JSON(또는 .npz) 파일, 또는 표준 입력을 뜻하는 - (다른 "
    "입력이 없으면 파이프로 들어온 입력을 읽습니다).",
    "help.explain.preset": "내장 프리셋 (목록은 qkvcalc presets로 볼 수 있습니다).",
    "help.explain.x": '입력 X, 행은 ";"로 구분: "1 2; 0 1", 또는 .npy 파일.',
    "help.explain.wq": "W_Q, 명령줄에 직접 입력 (--x와 같은 꼴).",
    "help.explain.wk": "W_K, 명령줄에 직접 입력 (--x와 같은 꼴).",
    "help.explain.wv": "W_V, 명령줄에 직접 입력 (--x와 같은 꼴).",
    "help.explain.wo": "W_O, 명령줄에 직접 입력 (헤드들을 결합하는 출력 선형 투영).",
    "help.explain.tokens": '토큰 이름, 공백으로 구분: "I love cats".',
    "help.explain.mask": 'none(없음), causal(인과 마스크), 또는 0/1 행렬 "1 0; 1 1" '
    "(1 = 어텐션 허용).",
    "help.explain.heads": "헤드 수 H.",
    "help.explain.kv_heads": "Key/Value 헤드 수 G (GQA, Grouped-Query Attention).",
    "help.explain.scale": "어텐션 스코어에 곱하는 스케일링 계수 (기본값 1/√d_k): 0.5, "
    "1/sqrt(8). 계수 c는 소프트맥스의 온도 1/c처럼 작용합니다: 작을수록 가중치가 고르게 퍼지고, "
    "클수록 한쪽으로 쏠립니다.",
    "help.explain.layout": "rows: Q = X·W_Q; torch: PyTorch가 저장하는 방식의 가중치 (out×in).",
    "help.explain.positions": 'Query의 위치, 공백으로 구분: "0 1 2" (기본값 0…n−1).',
    "help.explain.causal_align": "top-left(기본값, is_causal=True와 같음) 또는 bottom-right"
    "(캐시로 디코딩할 때처럼 마지막 Query를 마지막 Key에 맞춤).",
    "help.explain.chunk": "청크 어텐션 C (Llama 4): 각 Query는 C개 위치로 된 자기 청크 안에서 "
    "자기 위치까지의 Key만 봅니다 (--mask causal 필요).",
    "help.explain.window": "슬라이딩 윈도우 W: 각 Query는 자기 위치를 포함한 최근 W개 위치를 "
    "봅니다 (--mask causal 필요).",
    "help.explain.positional": "sinusoidal: 논문의 위치 인코딩을 X에 더합니다.",
    "help.explain.rope": "q와 k에 회전 위치 임베딩(RoPE)을 이 theta로 적용합니다 (LLaMA는 10000).",
    "help.explain.rope_style": "half: 차원 i와 i + R/2 (LLaMA, GPT-NeoX); pairs: 2i와 2i+1 "
    "(GPT-J).",
    "help.explain.rope_dims": "각 헤드에서 회전하는 차원 수 (짝수, 기본값 d_k).",
    "help.explain.alibi": "ALiBi의 거리 벌점을 헤드마다 논문의 경사로 더합니다.",
    "help.explain.softcap": "스코어를 소프트캡합니다: c·tanh(s/c) (Gemma 2는 50).",
    "help.explain.format": "출력 형식 (기본값: table, 또는 --output 파일의 확장자에 따름).",
    "help.explain.output": "표준 출력 대신 이 파일에 씁니다.",
    "help.explain.detail": "full: 자리가 허락하는 곳마다 칸별 계산 과정까지; brief: 표만.",
    "help.explain.precision": "표시할 소수 자릿수.",
    "help.explain.target": "목표 출력 T (n × d_out, --x와 같은 형식): --backward가 "
    "L = ½·Σ(O − T)²에서 시작합니다.",
    "help.explain.grad_output": "직접 주는 dL/dO (n × d_out, --x와 같은 형식), "
    "out.backward(grad)가 받는 grad와 같습니다: --backward가 여기서 시작합니다.",
    "help.explain.attend": '각 Query가 주목해야 할 Key, 1부터 세어 Query마다 하나 ("3 1 -": '
    "목표가 없으면 -): --backward가 L = −Σᵢ log A[i, tᵢ]에서 시작합니다. 가르치기 위한 "
    "지름길입니다(실제 모델은 어디를 보라는 말을 듣지 않습니다. --target은 손실을 출력에 둡니다).",
    "help.explain.backward": "순전파 단계 뒤에 역전파를 보여 줍니다: 손실(문제의 grad_output, "
    "target, attend)에서 X와 가중치(W_Q, W_K, W_V, W_O, 편향, 그리고 층 자신의 가중치: MLA의 "
    "잠재 가중치, 선형 층의 가중치)까지, 또는 주어진 Q, K, V까지의 모든 기울기.",
    "help.explain.dtype": "모든 단계를 이 dtype에서 하드웨어가 계산하듯 계산합니다: float32, "
    "bfloat16, float16, float8_e4m3fn, float8_e5m2 (float8은 --policy eager에서 텐서마다 배율 "
    "하나를 두고 저장하고, naive에서는 단순 형변환합니다). 각 칸은 float64 쌍둥이, 마지막 자리 "
    "단위(ulp)의 오차와 나란히 보입니다.",
    "help.explain.policy": "--dtype과 함께: 누구의 반올림인지. eager(기본값): transformers의 "
    "eager 어텐션(float32 합, float32 softmax. float8은 FP8 커널처럼 텐서마다 배율 하나); sdpa: "
    "CPU에서의 torch scaled_dot_product_attention(d_k = d_v이면 flash 커널, 아니면 math 커널); "
    "naive: 업캐스트도 배율도 없이 모든 연산을 dtype으로.",
    "precision.policy_without_dtype": "--policy {policy} 옵션은 낮은 정밀도 dtype의 반올림 방식을 "
    "정합니다. --dtype도 주세요(float32, bfloat16, float16, float8_e4m3fn, float8_e5m2)",
    "help.explain.exact": "수가 유리수로 남는 곳에서는 정확한 분수로 보여 줍니다.",
    "help.explain.worksheet": "워크시트: 입력은 채우고 계산할 칸은 모두 비워 둡니다(계산 과정도, "
    "결과를 알려 주는 설명도 없습니다). 답은 이 옵션 없이 같은 명령을 실행하면 나옵니다.",
    "help.explain.max_bytes": "이보다 큰 입력(바이트)은 거부합니다.",
    "help.explain.max_elements": "입력과 단계들에 담길 숫자가 이보다 많은 문제는 거부합니다.",
    "help.explain.stages": "이 단계들만 id로 골라 보여 줍니다: weights,output "
    "(계산 순서대로; --format json에 모든 id가 있습니다).",
    "help.explain.head": "헤드 H(1…H)의 단계와 모든 헤드가 함께 쓰는 단계만 보여 줍니다.",
    "help.presets": "내장 프리셋 목록을 보여 주거나, 프리셋 하나를 JSON으로 출력합니다.",
    "help.presets.list": "프리셋 목록을 한 줄 설명과 함께 보여 줍니다.",
    "help.presets.show": "프리셋 하나를 JSON으로 출력합니다: 복사해서 고쳐 쓰는 틀로 쓰세요.",
    "help.presets.name": "프리셋 이름.",
    "help.quiz": "어텐션을 손으로 계산해 봅니다: 칸마다 채점하고, 실수는 처음 시작된 곳까지 "
    "거슬러 찾아 줍니다.",
    "help.quiz.source": "입력 형식의 JSON 파일, 또는 표준 입력을 뜻하는 -.",
    "help.quiz.preset": "내장 프리셋 (목록은 qkvcalc presets로 볼 수 있습니다).",
    "help.quiz.random": "작은 정수로 이루어진 새 무작위 문제.",
    "help.quiz.seed": "--random과 함께: 매번 같은 문제를 냅니다.",
    "help.quiz.size": "--random과 함께: 토큰 수,폭 (기본값 3,2).",
    "help.quiz.stages": "풀어 볼 단계를 순서대로: q,k,v,kt,scores,scaled,masked,exp,"
    "weights,output (2/scores: 헤드 2만). 기본값: q,k,v,scores,scaled,weights,output.",
    "help.quiz.answers": '질문 없이 답안지만 채점합니다: 단계 id("k", "2/scores")마다 행렬을 '
    "적은 JSON 파일, 또는 표준 입력을 뜻하는 -.",
    "help.quiz.format": "--answers와 함께: 표, 또는 자동 채점기를 위한 JSON.",
    "help.quiz.precision": "답이 맞아야 하는 소수 자릿수 (마지막 자리 단위의 절반까지 허용).",
    "help.new": "문제를 한 단계씩 입력하고(행마다 바로 확인합니다) JSON으로 저장합니다.",
    "help.new.file": "문제를 저장할 파일 (기본값: 표준 출력에 출력).",
    # ---- modern attention: positions, windows, RoPE, ALiBi, biases, softcap, q/k norm ----
    "stage.pe.title": "위치 인코딩",
    "stage.pe.why": "어텐션 자체는 순서를 모릅니다. 토큰을 섞으면 출력도 같은 순서로 "
    "섞일 뿐입니다. 각 토큰의 위치에 따라 정해지는 벡터를 X에 더해 주어야 처음과 끝을 "
    "구별할 수 있습니다.",
    "stage.x_pe.title": "입력 + 위치",
    "stage.x_pe.why": "위치 인코딩을 투영 전에 X에 칸마다 더합니다. 이제부터 모든 Query, Key, "
    "Value가 그 토큰의 위치를 담습니다.",
    "stage.q_norm.title": "Query 정규화 (RMSNorm)",
    "stage.q_norm.why": "헤드마다 Query를 제곱평균제곱근이 약 1이 되도록 나눈 뒤, 차원마다 "
    "학습된 가중치를 곱합니다. q의 크기를 일정한 범위 안에 두면 학습 중에 스코어가 끝없이 "
    "커지지 않습니다 (Qwen3, Gemma 3).",
    "stage.k_norm.title": "Key 정규화 (RMSNorm)",
    "stage.k_norm.why": "헤드마다 Key에도 같은 계산을 합니다: 행마다 x / √(mean(x²) + ε) · w.",
    # ---- the norm on V (qkvcalc/ops/v_norm.py) ----
    "stage.v_norm.title": "Value 정규화 (가중치 없는 RMSNorm)",
    "stage.v_norm.why": "Gemma 3n과 Gemma 4는 헤드마다 Value의 행도 다시 맞춥니다: 행마다 v / "
    "√(mean(v²) + ε)이고 학습된 가중치는 없습니다. 그래서 모든 토큰이 제곱평균제곱근이 1보다 조금 "
    "작은 Value를 넘기며, 어느 토큰도 다른 토큰보다 크게 들리지 않습니다(행이 ε에 비해 아주 작으면 "
    "그렇지 않고, 0뿐인 행은 0으로 남습니다). 가중치는 이렇게 정규화한 Value를 섞습니다.",
    "hint.v_norm": "{cell} = {src}[{i},{j}] / √({src}의 {i}번째 행의 제곱 평균 + ε).",
    "note.v_norm": "행마다 v / √(mean(v²) + ε), ε = {eps}, 가중치 없음.",
    "ui.variant.v_norm": "Value 정규화 (ε = {eps})",
    "mistake.v_norm_sum_not_mean": "이 값은 행의 길이 √(Σ v²)로 나눴습니다. Value 정규화는 평균의 "
    "제곱근 √(mean(v²) + ε)로 나누며, 평균은 d_v = {d_v}개 차원에 걸쳐 냅니다.",
    "v_norm.value": 'v_norm은 true(ε = 1e-6) 또는 {{"eps": 1e-6}} 같은 객체여야 합니다. 받은 값: '
    "{value}",
    "v_norm.tiles_backward": "Value 정규화(v_norm)는 아직 --tiles와 --backward를 함께 쓸 때 "
    "계획되지 않습니다: --tiles를 빼거나(전체 실행이 기울기를 보여 줍니다) --backward를 빼세요.",
    "v_norm.decode": "Value 정규화(v_norm)는 KV 캐시로 한 단계씩 계산되지 않습니다: --decode를 "
    "빼세요(전체 실행이 보여 줍니다).",
    "stage.grad_v_norm.title": "역전파: 정규화한 Value의 기울기",
    "stage.grad_v_norm.why": "출력은 A·V_norm이었으므로 정규화한 Value의 기울기는 Aᵀ·dO입니다: "
    "Value의 각 행은 그 행을 읽은 Query들의 출력 기울기를, 읽은 만큼의 가중치로 모읍니다.",
    "stage.grad_back.v_rmsnorm.title": "Value 정규화를 거치는 역전파",
    "stage.grad_back.v_rmsnorm.why": "정규화는 Value의 각 행에 ρ = 1/√(mean(v²) + ε)를 곱했습니다. "
    "역전파는 두 부분입니다: 같은 방식으로 조정한 기울기 ρ·g에서, 행의 길이만 바꿀 부분을 뺍니다. "
    "그 부분은 정규화가 되돌려 버리기 때문입니다.",
    "stage.q_rot.title": "회전 위치 임베딩(RoPE): Query",
    "stage.q_rot.why": "RoPE는 Query의 차원을 두 개씩 짝지어, 위치 × 그 짝의 주파수만큼 "
    "회전시킵니다. X에는 아무것도 더하지 않고, 위치는 q와 k의 방향에 담깁니다.",
    "stage.k_rot.title": "회전 위치 임베딩(RoPE): Key",
    "stage.k_rot.why": "Key도 자기 위치만큼 같은 방식으로 회전합니다. q를 각 a, k를 각 "
    "b만큼 돌리면 내적은 k만 b − a만큼 돌린 것과 똑같이 바뀌므로, 스코어는 두 위치가 "
    "어디인지가 아니라 둘 사이의 거리에만 달려 있습니다.",
    # ---- RoPE on the values and back on the output (qkvcalc/ops/vo_rope.py) ----
    "stage.v_rot.title": "회전 위치 임베딩(RoPE): Value",
    "stage.v_rot.why": "Value도 Key와 똑같이, 각자 자기 Key의 위치만큼 회전합니다(DeepSeek-V4가 "
    "이렇게 하며, 그 모델에서는 Key/Value 헤드 하나가 K이자 V입니다. 여기서는 K와 V가 다를 수 "
    "있습니다). 각 헤드의 출력은 A·V 뒤에 Query의 위치만큼 되돌리므로, "
    "Value가 출력의 회전 열에 가져오는 것은 둘이 어디 있는지가 아니라 Key가 Query에서 얼마나 "
    "떨어져 있는지에 달려 있습니다.",
    "stage.out_back.title": "되돌린 출력(RoPE, −i만큼)",
    "stage.out_back.why": "각 헤드의 출력 행을 그 Query의 위치 i만큼 되돌립니다. O_i = "
    "Σⱼ Aᵢⱼ·R(j)·vⱼ의 회전 열은 Σⱼ Aᵢⱼ·R(j − i)·vⱼ가 되어, 각 Value가 Key와 Query 사이의 거리 "
    "j − i만큼 돌아간 채로 섞입니다. 나머지 열은 그대로 지나갑니다.",
    "hint.vo_rope_back": "{cell}: {src}의 {i}번째 행의 {j}번 차원을 짝 차원과 함께 φ = −(토큰 "
    "{i}의 위치) × 그 짝의 주파수만큼 회전합니다: a·cos φ − b·sin φ(짝의 첫째) 또는 "
    "b·cos φ + a·sin φ(둘째).",
    "note.vo_rope_v": "Value의 {d_v}개 열 중 앞의 {dims}개가 Key처럼 회전합니다. 행마다 자기 "
    "Key의 위치({positions})만큼이며, 나머지 열은 그대로 지나갑니다.",
    "note.vo_rope_back": "각 출력 행의 앞 {dims}개 열을 그 Query의 위치({positions})만큼, 곧 "
    "각도 −위치 × ω만큼 되돌립니다. 나머지 열은 그대로 지나갑니다.",
    "note.vo_rope_relative": "그래서 Key 위치 j의 Value는 R(j)·R(−i) = R(j − i)만큼 돌아서 "
    "Query i에 닿습니다. 출력의 회전 열은 Q·Kᵀ처럼 상대 위치 j − i로 Value를 섞습니다.",
    "ui.variant.vo_rope": "V에 RoPE, 출력에서 되돌림",
    "mistake.vo_rope_not_turned_back": "이 값은 A·V_rot 그대로입니다. 출력은 아직 Query의 "
    "위치만큼, 곧 −i만큼 되돌려야 각 Value가 j − i만큼 돌아간 것이 됩니다.",
    "mistake.vo_rope_turned_forward": "이 값은 출력을 +i만큼 돌린 것입니다. 출력은 −i만큼 "
    "되돌립니다: R(−i)·R(j) = R(j − i), 상대 위치입니다.",
    "stage.grad_v_rot.title": "역전파: 회전한 Value의 기울기",
    "stage.grad_v_rot.why": "출력이 A·V_rot였으므로 회전한 Value의 기울기는 Aᵀ·dO입니다. 각 "
    "Value 행은 자신을 읽은 Query들의 출력 기울기를, 읽은 만큼의 가중치로 모읍니다. 그다음 RoPE의 "
    "역전파가 이를 Key의 위치만큼 되돌립니다.",
    "stage.grad_back.turn_back.title": "출력의 되돌림을 거슬러 역전파",
    "stage.grad_back.turn_back.why": "출력은 쌍마다 −i·ω만큼 되돌려졌습니다. 회전의 전치는 반대 "
    "방향 회전이므로, 기울기를 +i·ω만큼 앞으로 돌립니다. 같은 각도를 반대로 돌리는 것입니다.",
    "vo_rope.value": "vo_rope는 true(Value를 Key처럼 돌리고 출력을 되돌림) 또는 false여야 "
    "합니다. 받은 값: {value}",
    "vo_rope.needs_rope": "vo_rope는 문제의 회전으로 Value와 출력을 돌립니다. rope도 주세요"
    '(예: "rope": {{"style": "pairs", "dims": 2}}).',
    "vo_rope.d_v": "vo_rope는 각 헤드의 Value에서 앞의 {dims}개 열(rope의 dims)을 돌리는데, "
    "헤드의 d_v = {d_v}입니다: rope의 dims를 {d_v} 이하로 주세요.",
    "vo_rope.tiles_backward": "Value의 RoPE(vo_rope)는 아직 --tiles와 --backward를 함께 쓸 때 "
    "계획되지 않습니다: --tiles를 빼거나(전체 실행이 기울기를 보여 줍니다) --backward를 빼세요.",
    "vo_rope.decode": "Value의 RoPE(vo_rope)는 KV 캐시로 한 단계씩 계산되지 않습니다: "
    "--decode를 빼세요(전체 실행이 보여 줍니다).",
    # ---- compressed keys (qkvcalc/ops/compress.py) ----
    "stage.comp_kv.title": "압축 항목: 모을 값",
    "stage.comp_kv.why": "항목은 X에서 자기만의 프로젝션 W_C로 만듭니다. 각 토큰의 행은 그 토큰의 "
    "윈도우가 만드는 항목에 보태는 값입니다. 항목 하나가 토큰 m개의 윈도우 하나를 "
    "요약하고(윈도우가 겹치면 두 윈도우의 반쪽씩), 모든 헤드가 이를 Key와 Value 하나로 더 "
    "읽으므로 긴 시퀀스에서도 Key가 덜 듭니다.",
    "stage.comp_gate.title": "압축 항목: 게이트",
    "stage.comp_gate.why": "X의 두 번째 프로젝션 W_CG가 각 토큰에 채널마다 게이트를 줍니다. "
    "위치의 바이어스를 더하고 윈도우의 게이트들을 소프트맥스에 넣으면, 그 토큰이 항목에서 "
    "얼마나 셈에 들어가는지가 됩니다.",
    "stage.comp_weights.title": "압축 항목: 토큰마다의 몫",
    "stage.comp_weights.why": "항목마다, 채널마다 따로, 그 칸들(윈도우의 토큰들, 윈도우가 겹치면 "
    "두 윈도우의 토큰들)에 대한 소프트맥스입니다: e^(z + b)를 그 항목의 칸들의 합으로 나눕니다. "
    "한 항목의 몫은 채널마다 합이 1이므로, 항목은 채널별로 토큰들의 가중 평균입니다.",
    "stage.comp_pooled.title": "압축 항목: 모은 값",
    "stage.comp_pooled.why": "각 항목은 그 칸들의 C_E 행에 각자의 몫을 곱해 채널마다 더한 "
    "것입니다: 토큰 윈도우 하나에 행 하나입니다.",
    "stage.comp_norm.title": "압축 항목: RMSNorm",
    "stage.comp_norm.why": "각 항목을 그 제곱평균제곱근으로 나누고 정규화의 가중치를 곱합니다. "
    "토큰들의 Key/Value 행과 같습니다.",
    "stage.comp_rot.title": "압축 항목: 회전 위치 임베딩(RoPE)",
    "stage.comp_rot.why": "각 항목을 Key처럼, 그 윈도우의 첫 토큰 위치 w·m에서 회전합니다. "
    "그래서 Q·Kᵀ는 Query가 윈도우의 시작에서 얼마나 떨어져 있는지를 봅니다.",
    "stage.k_more.title": "항목을 더한 Key",
    "stage.k_more.why": "항목이 토큰들의 Key 아래에 붙습니다. 모든 헤드의 스코어에 항목마다 "
    "열이 하나씩 생기고, 마스크가 각 Query가 어느 항목을 읽을 수 있는지 정합니다.",
    "stage.v_more.title": "항목을 더한 Value",
    "stage.v_more.why": "같은 항목이 Value 아래에도 붙습니다(항목은 자기 자신의 Key이자 "
    "Value입니다). 그래서 Query가 항목에 준 가중치만큼 그 항목의 행이 출력에 들어옵니다.",
    "hint.comp_weights": "{cell} = e^(이 칸의 게이트 + 그 위치의 바이어스 − 그 항목에서 가장 큰 "
    "값) / 이 채널에서 그 항목의 칸들에 대한 같은 값들의 합.",
    "hint.comp_pooled": "{cell}: 채널 {j}에서 항목 {i}의 칸마다 몫 × 그 칸의 값을 더한 것.",
    "hint.comp_more": "{cell}: 토큰의 행이면 {src}의 {i}번째 행, 그 뒤로는 항목의 행.",
    "note.comp_kv": "토큰 {m}개마다 항목 하나, 너비 {width}입니다. 항목 수: ⌊{n}/{m}⌋ = "
    "{count}(마지막으로 다 찬 윈도우 뒤의 토큰은 아직 어느 항목에도 들어가지 않습니다).",
    "note.comp_kv_overlap": "{width}개 열씩 두 반쪽 [Ca | Cb]: 항목은 자기 윈도우의 Cb 반쪽과 "
    "바로 앞 윈도우의 Ca 반쪽을 모읍니다. 토큰 {m}개마다 항목 하나, 항목 수: ⌊{n}/{m}⌋ = "
    "{count}.",
    "note.comp_gate": "게이트의 열은 모으는 값의 열과 같습니다: 토큰과 채널마다 게이트 하나.",
    "note.comp_weights": "행 {m}개로 된 윈도우 하나가 항목 하나의 것입니다: t번째 행은 열마다 "
    "따로 C⌈t/{m}⌉에 들어갑니다. 더하는 바이어스는 윈도우 안 토큰 자리에 해당하는 B의 행입니다.",
    "note.comp_weights_overlap": "Cb 반쪽의 열에서 t번째 행은 자기 윈도우의 항목 C⌈t/{m}⌉에, Ca "
    "반쪽의 열에서는 다음 윈도우의 항목 C(⌈t/{m}⌉ + 1)에 들어갑니다. 그런 항목이 없으면 0입니다. "
    "항목의 소프트맥스는 채널마다 그 2·{m}개 칸에 대해 계산합니다(C1은 {m}개).",
    "note.comp_pooled": "항목 w는 채널마다 그 칸들의 몫 × 값을 더합니다.",
    "note.comp_rot": "각 항목의 앞 {dims}개 열을 문제의 회전 주파수로, 그 윈도우의 첫 토큰 "
    "위치에서 회전합니다(C1은 0, 다음 항목마다 {m}씩 뒤). 나머지 열은 그대로 지나갑니다.",
    "note.comp_more": "{side}' = 토큰들의 행, 그다음 항목마다 행 하나(항목 수: {count}). 모든 "
    "헤드가 같은 항목을 Key로도 Value로도 읽습니다.",
    "note.comp_visible": "항목의 열: 위치 p(t1이 0)의 Query는 항목의 윈도우 전체가 p 이전(p "
    "포함)에 있을 때만 그 항목을 읽습니다. 곧 C1부터 C⌊(p + 1)/{m}⌋까지이며, p + 1 < {m}이면 "
    "하나도 없습니다. 윈도우와 인과 마스크는 토큰의 열에 적용됩니다.",
    "note.exact_stops_comp": "여기부터는 소수입니다. 토큰의 몫은 e^x를 그런 값들의 합으로 나눈 "
    "것이라 분수를 벗어납니다.",
    # the backward through the entries (--backward, train)
    "stage.grad_v_more.title": "역전파: 항목을 더한 Value의 기울기",
    "stage.grad_v_more.why": "헤드의 출력이 A·V'였으므로 dV'는 Aᵀ에 그 출력의 기울기를 곱한 "
    "것입니다. V'의 각 행은 토큰의 행이든 항목의 행이든, 자신을 읽은 Query들의 출력 기울기를 "
    "읽은 만큼의 가중치로 모읍니다.",
    "stage.grad_stack_rows.title": "역전파: 기울기에서 토큰들의 행",
    "stage.grad_stack_rows.why": "K'(또는 V')는 토큰들의 행을 항목들의 행 위에 쌓았으므로, 토큰 "
    "부분의 기울기는 d(K')(또는 d(V'))의 앞쪽 행들 그대로입니다. 항목들의 행은 항목들로 "
    "돌아갑니다.",
    "stage.grad_comp_entries.title": "역전파: 항목들의 기울기",
    "stage.grad_comp_entries.why": "모든 헤드가 같은 항목들을 자기 Key K'와 Value V'의 마지막 "
    "행들로 읽으므로(항목은 그 자체로 Key이자 Value입니다), 항목들은 모든 헤드의 dK'와 dV'를 "
    "거쳐 손실에 닿습니다. 그래서 그 기울기는 그 모두의 해당 행들을 더합니다(가중치에 대한 "
    "손실에서는 Value가 닿지 않으므로 Key의 것만).",
    "note.grad_shared_rows": "{x}: 각 헤드에서 {names}의 {rows}행이므로, 기울기는 그 몫 "
    "{count}개의 해당 행들을 모두 더합니다.",
    "stage.grad_back.comp_norm.title": "항목들의 RMSNorm을 거슬러 역전파",
    "stage.grad_back.comp_norm.why": "정규화는 각 항목에 ρ = 1/√(mean(x²) + ε)와 w를 곱했습니다. "
    "그 역전파는 두 부분입니다: 기울기에 같은 비율을 곱한 ρ·(w ⊙ g)에서, 항목의 길이만 바꾸는 "
    "부분(정규화가 상쇄하는 부분)을 뺍니다.",
    "stage.grad_comp_weights.title": "역전파: 각 토큰의 몫의 기울기",
    "stage.grad_comp_weights.why": "항목은 그 칸들에 걸친 Σ_t P ⊙ C_E였으므로, 몫의 기울기는 그 "
    "채널에서 항목의 기울기에 칸의 값을 곱한 것입니다: dP = dE ⊙ C_E.",
    "stage.grad_comp_kv.title": "역전파: 모으는 값 C_E의 기울기",
    "stage.grad_comp_kv.why": "같은 곱을 값 쪽에서 본 것입니다: dC_E = dE ⊙ P. 각 토큰의 값은 그 "
    "항목의 기울기에 자기 몫을 곱한 것을 받습니다(어느 항목의 윈도우에도 없는 토큰은 0).",
    "note.comp_grad_spread": "각 칸은 자신이 들어가는 항목의 기울기(그 칸의 채널에서 dE의 그 "
    "행)를 받습니다. 그 항목은 풀의 설명이 그 칸에 대해 말하는 항목이고, 어느 항목에도 들어가지 "
    "않는 칸은 0을 받습니다.",
    "hint.comp_grad_spread": "{cell} = 이 칸이 들어가는 항목의 기울기 {src}(그 채널) × 이 칸의 "
    "{other}.",
    "stage.grad_back.pool_softmax.title": "윈도우의 소프트맥스를 거슬러 역전파",
    "stage.grad_back.pool_softmax.why": "각 항목의 몫은 채널마다 그 칸들에 걸친 소프트맥스입니다. "
    "어텐션의 소프트맥스처럼 dZ = P ⊙ (dP − r)이고, r은 그 채널에서 항목의 칸들에 걸친 P·dP의 "
    "합입니다. 어느 항목의 윈도우에도 없는 토큰은 0을 받습니다.",
    "stage.grad_wc.title": "W_C의 기울기",
    "stage.grad_wc.why": "C_E = X·W_C이므로 dW_C = Xᵀ·dC_E입니다. 압축기의 값은 모든 헤드가 "
    "항목들에 요구한 것에서, 항목들의 회전과 정규화와 풀을 거슬러 배웁니다.",
    "stage.grad_wcg.title": "W_CG의 기울기",
    "stage.grad_wcg.why": "Z = X·W_CG이므로 dW_CG = Xᵀ·dZ입니다. 게이트는 각 토큰이 자기 "
    "항목에서 얼마나 셈에 들어가야 하는지를 배웁니다.",
    "stage.grad_comp_bias.title": "위치 바이어스 B의 기울기",
    "stage.grad_comp_bias.why": "B의 r행은 모든 윈도우에서 r번째 자리 칸의 게이트에 더해졌으므로, "
    "dB의 r행은 윈도우들에 걸쳐 그 자리의 dZ 행들을 더합니다.",
    "note.comp_grad_bias": "{m}행짜리 윈도우 {count}개: dB의 r행은 dZ의 r, r + {m}, … 행을 "
    "더합니다(마지막 온전한 윈도우 뒤의 토큰은 더해지지 않습니다).",
    "stage.grad_comp_norm_weight.title": "항목 정규화 가중치의 기울기",
    "stage.grad_comp_norm_weight.why": "E_norm = E·ρ·w가 항목마다 계산되므로, 각 가중치 wⱼ는 "
    "항목들에 걸쳐 dE_norm[w, j]에 정규화된 칸 E[w, j]·ρ_w를 곱한 것을 모읍니다.",
    "note.comp_grad_topk": "이 마스크에는 인덱서가 고른 항목들(각 Query가 볼 수 있는 항목 중 "
    "top_k = {top_k}개, 그보다 적으면 전부)이 고정된 수로 들어 있습니다. top-k는 고르기라서 "
    "기울기가 없으므로, 역전파는 인덱서를 거치지 않습니다. 인덱서의 가중치(W_IC, W_IG, B_I, "
    "정규화 가중치, W_IQ, W_w)는 이 손실에서 기울기를 받지 않고, X와 C_Q도 인덱서를 거쳐서는 "
    "기울기의 몫을 받지 않습니다.",
    "train.comp_index_fixed": "항목들에 대한 인덱서의 가중치(W_IC, W_IG, B_I, 정규화 가중치, "
    "W_IQ, W_w)는 움직이지 않습니다: 손실이 여기에 기울기를 주지 않습니다(top-k는 고르기라서 "
    "역전파에서 고정된 마스크로 둡니다). 각 단계는 항목의 W_C, W_CG, B, w_E를 포함해 나머지를 "
    "학습하고, 인덱서는 주어진 가중치 그대로 각 Query의 항목을 다시 고릅니다.",
    "stage.grad_x.comp.title": "역전파: 입력 X의 기울기",
    "stage.grad_x.comp.why": "X는 자신을 읽는 모든 프로젝션을 거쳐 손실에 닿고, 압축기의 W_C와 "
    "W_CG도 그중에 있습니다: X에서 모은 각 항목은 모든 헤드의 Key이자 Value입니다. 다변수 연쇄 "
    "법칙은 수식이 나열하는 대로 그 경로들을 더합니다(다른 것들 옆에 dC_E·W_Cᵀ + dZ·W_CGᵀ). "
    "이것이 아래 층으로 흘러갑니다.",
    "ui.variant.compress": "압축 Key: 토큰의 Key 뒤에, 토큰 {m}개마다 항목 하나",
    "ui.variant.compress_overlap": "압축 Key: 토큰의 Key 뒤에, 겹치는 윈도우로 토큰 {m}개마다 "
    "항목 하나",
    "mistake.comp_bias_missing": "위치 바이어스 B가 빠졌습니다. 각 게이트에는 소프트맥스 전에 "
    "윈도우 안 토큰 자리의 바이어스를 더합니다.",
    "mistake.comp_softmax_axis": "이 소프트맥스는 행을 따라, 채널들에 대해 계산했습니다. 몫은 "
    "채널마다 따로 윈도우의 위치들에 대해(열을 따라) 구합니다.",
    "compress.not_object": "compress는 m, wkv, wgate, bias, norm을 가진 객체여야 합니다(eps와 "
    "overlap은 줄 수 있습니다). 받은 값: {value}",
    "compress.unknown_key": "compress에는 {key} 키가 없습니다. 키는 {known}입니다",
    "compress.missing": "compress에 빠진 키: {missing}. 항목에는 m, wkv, wgate, bias, norm이 "
    "필요합니다",
    "compress.needs_x": "compress는 X에서 항목을 모읍니다: x와 가중치를 주세요(q, k, v를 직접 "
    "주지 말고)",
    "compress.widths": "compress는 같은 항목을 모든 헤드의 Key와 Value에 붙이므로 d_k와 d_v가 "
    "같아야 하는데, d_k = {d_k}, d_v = {d_v}입니다",
    "compress.overlap": "compress.overlap은 true(항목 하나가 윈도우 둘을 모음) 또는 false여야 "
    "합니다. 받은 값: {value}",
    "compress.m_long": "compress.m = {m}: 시퀀스(n = {n})보다 깁니다. 다 찬 윈도우가 없어 항목이 "
    "만들어지지 않습니다. m을 {n} 이하로 주거나 compress를 빼세요",
    "compress.shape": "{field}의 모양이 {shape}인데, {want}이어야 합니다(wkv와 wgate: d_model × "
    "d_k, overlap이면 d_k의 두 배; bias: m × 그 열 수; norm: d_k)",
    "stage.idx_kv.title": "인덱서의 항목: 모을 값",
    "stage.idx_kv.why": "라이트닝 인덱서는 어텐션의 항목보다 좁은 자기만의 항목을 X에서 자기 "
    "프로젝션으로 모읍니다. 항목마다 Key 하나가 되고, 인덱서는 Query들을 이 Key에 대해 점수 매겨 "
    "어느 항목을 읽을지 고릅니다.",
    "stage.idx_gate.title": "인덱서의 항목: 게이트",
    "stage.idx_gate.why": "어텐션의 항목처럼, 인덱서에도 토큰과 채널마다 자기 게이트가 있습니다.",
    "stage.idx_weights.title": "인덱서의 항목: 토큰마다의 몫",
    "stage.idx_weights.why": "인덱서의 항목마다, 채널마다 따로, 그 윈도우의 칸들에 대한 "
    "소프트맥스입니다. 어텐션의 항목과 같습니다.",
    "stage.idx_pooled.title": "인덱서의 항목: 모은 값",
    "stage.idx_pooled.why": "인덱서의 각 항목은 그 칸들의 값에 각자의 몫을 곱해 채널마다 더한 "
    "것입니다.",
    "stage.idx_norm.title": "인덱서의 항목: RMSNorm",
    "stage.idx_norm.why": "인덱서의 각 항목을 그 제곱평균제곱근으로 나누고 정규화의 가중치를 "
    "곱합니다.",
    "stage.idx_rot.title": "인덱서의 항목: 회전 위치 임베딩(RoPE)",
    "stage.idx_rot.why": "인덱서의 각 항목을 Key처럼 그 윈도우의 첫 위치 w·m에서 회전합니다. "
    "인덱서가 점수를 매기는 Key가 이것입니다.",
    "stage.idx_q.title": "인덱서의 Query",
    "stage.idx_q.why": "인덱서의 Query는 Query 잠재 벡터 C_Q에서 자기 가중치로 만들며, 토큰마다 "
    "작은 인덱스 헤드가 여럿입니다.",
    "stage.idx_q_rot.title": "인덱서의 Query: 회전 위치 임베딩(RoPE)",
    "stage.idx_q_rot.why": "각 인덱스 헤드의 Query를 토큰의 위치에서 회전합니다. 그래서 항목의 "
    "점수는 항목의 윈도우가 Query에서 얼마나 떨어져 시작하는지를 봅니다.",
    "stage.idx_w.title": "인덱서의 헤드별 가중치",
    "stage.idx_w.why": "X의 프로젝션이 토큰마다 인덱스 헤드당 가중치 하나를 줍니다: 그 헤드의 "
    "점수가 토큰의 선택에 얼마나 들어가는지입니다.",
    "stage.idx_scores.title": "인덱서가 매긴 항목의 점수",
    "stage.idx_scores.why": "각 Query가 각 항목에 점수를 매깁니다: 인덱스 헤드마다 ReLU(q·k/√D)에 "
    "헤드의 가중치를 √H_I로 나눈 값을 곱해 헤드들에 대해 더합니다. 가장 높은 점수만 남습니다.",
    "stage.idx_masked.title": "보이는 항목에 대한 인덱서의 점수",
    "stage.idx_masked.why": "Query의 자리에서 아직 윈도우가 다 차지 않은 항목은 고를 수 "
    "없습니다: 그 점수는 −∞가 됩니다.",
    "stage.idx_topk.title": "Query마다 남기는 항목(상위 k개)",
    "stage.idx_topk.why": "각 Query는 보이는 항목 중 점수가 가장 높은 k개를 남깁니다(1 = 남김). "
    "나머지는 미래처럼 모든 헤드의 스코어에서 가려집니다. 보이는 항목이 그보다 적은 Query는 "
    "모두 남깁니다.",
    "note.idx_q": "인덱스 헤드 {heads}개, 각각 {dim}개의 수가 나란히 있습니다.",
    "note.idx_q_rot": "각 인덱스 헤드의 {dim}개 열 중 앞의 {dims}개가 토큰의 위치에서 회전합니다. "
    "나머지 열은 그대로 지나갑니다.",
    "note.idx_scores": "I[i, w] = 인덱스 헤드 {heads}개에 대한 (w_h/√{heads})·ReLU(q_h·k_w/"
    "√{dim})의 합.",
    "note.idx_visible": "위치 p(t1이 0)의 Query는 항목의 윈도우 전체가 p 이전(p 포함)에 있을 때만 "
    "그 항목을 고를 수 있습니다: C1부터 C⌊(p + 1)/{m}⌋까지이며, p + 1 < {m}이면 하나도 없습니다. "
    "나머지의 점수는 −∞가 됩니다.",
    "note.idx_topk": "각 행은 보이는 항목 중 가장 큰 점수 {top_k}개를 남깁니다(같으면 앞 항목). "
    "그다음 모든 헤드의 마스크가 남기지 않은 항목을 가립니다.",
    "compress.positions": "compress는 첫 토큰부터 센 행의 윈도우를 위치 0부터 {last}까지에서 "
    "모읍니다(항목은 w·m에서 회전합니다): positions와 key_positions를 빼세요",
    "compress.index_object": "compress.index는 wkv, wgate, bias, norm, wq, weights, heads, "
    "top_k를 가진 객체여야 합니다. 받은 값: {value}",
    "compress.index_overlap": "compress.index는 두 윈도우에 걸쳐 모은 항목에 점수를 매깁니다: "
    "compress.overlap을 true로 함께 주세요",
    "compress.index_latent": "compress.index는 mla의 Query 잠재 벡터 C_Q를 읽습니다: mla에 "
    "wq_a, q_a_norm, wq_b를 주세요",
    "compress.decode": "압축 Key(compress)는 아직 KV 캐시로 한 단계씩 계산되지 않습니다: "
    "--decode를 빼세요(전체 실행이 보여 줍니다).",
    "compress.tiles": "압축 Key(compress)는 아직 타일로 계획되지 않습니다: --tiles를 빼세요.",
    "compress.dtype": "압축 Key(compress)에는 아직 저정밀도 규칙이 없습니다: --dtype을 빼세요"
    "(float64 실행이 보여 줍니다).",
    "stage.score_bias.title": "스코어 바이어스",
    "stage.score_bias.why": "소프트맥스 전에 각 스코어에 더하는 수로, 토큰의 내용이 아니라 "
    "두 위치에 따라 정해집니다. 거리에 따라 커지는 ALiBi의 고정된 벌점이나, 상대 거리 "
    "구간마다 학습된 T5의 바이어스처럼 주어진 바이어스가 그 예입니다.",
    "stage.biased.title": "스코어 + 바이어스",
    "stage.biased.why": "스케일링된 스코어에 바이어스를 칸마다 더합니다. 음수 바이어스는 "
    "벡터를 하나도 바꾸지 않고 그 Key가 선택될 가능성을 낮춥니다.",
    "stage.capped.title": "소프트캡(softcapping)",
    "stage.capped.why": "c·tanh(s/c)는 모든 스코어를 −c와 c 사이에 둡니다. 작은 스코어는 "
    "거의 그대로 지나가고 아주 큰 스코어만 눌려서, 한 스코어가 소프트맥스를 한없이 지배할 수 "
    "없습니다 (Gemma 2).",
    "note.pe_sinusoidal": "d_model = {d_model}에 대한 논문의 인코딩: (열을 1부터 세어) 2i+1번 열은 "
    "sin(pos / 10000^(2i/d_model)), 2i+2번 열은 같은 각의 cos입니다. 한 주파수의 sin과 cos가 "
    "나란히 놓입니다.",
    "note.pe_given": "행렬로 주어진 위치 인코딩(GPT-2, BERT처럼 학습된 위치 임베딩): i번째 행을 "
    "i번째 토큰에 더합니다.",
    "note.positions": "위치: {positions}.",
    "note.rmsnorm": "행마다 x / √(mean(x²) + ε) · w, ε = {eps}.",
    "note.rope_pairs_half": "d_k = {d_k}개 차원 중 앞의 {dims}개가 회전하며, 차원 i의 짝은 차원 i "
    "+ {half}입니다 (HF LLaMA의 rotate_half, GPT-NeoX). 짝과 주파수 ω: {pairs}.",
    "note.rope_pairs_pairs": "d_k = {d_k}개 차원 중 앞의 {dims}개가 이웃한 짝 2i−1, 2i로 "
    "회전합니다 (GPT-J, Meta의 원래 코드). 짝과 주파수 ω: {pairs}.",
    "note.rope_angle": "각 짝은 각도 φ = 위치 × ω만큼 회전합니다: a′ = a·cos φ − b·sin φ, "
    "b′ = b·cos φ + a·sin φ. 위치: {positions}.",
    "note.rope_keys": "Key의 위치: {positions}.",
    "note.rope_partial": "부분 회전: {first}–{d_k}번 차원은 회전하지 않고 그대로 지나가며, 앞의 "
    "{dims}개만 회전합니다.",
    "note.rope_factor": "cos φ와 sin φ에 어텐션 계수를 곱하므로(YaRN, 계수 {factor}), "
    "회전한 차원도 그만큼 커지거나 작아집니다.",
    "note.rope_scores": "여기서 Q와 K는 회전한 것(Q_rot, K_rot)입니다.",
    "note.rope_shift": "RoPE의 핵심을 이 숫자로 확인합니다: 위치 {pos_q}에 있는 {query}, "
    "위치 {pos_k}에 있는 {key} 사이의 스코어는 {score}입니다. 둘 다 {offset}만큼 옮기면(위치 "
    "{moved_q}, {moved_k}) 스코어는 {moved}입니다. 중요한 것은 둘 사이의 "
    "거리({distance})뿐입니다.",
    "note.alibi_recipe": "ALiBi: 바이어스는 −slope·|pos_i − pos_j|로, 거리에 따라 커지는 "
    "벌점입니다. 이 헤드의 경사(slope)는 {slope}이며, 헤드 {heads}개에 대한 논문의 방법으로 "
    "정했습니다.",
    "note.alibi_given": "ALiBi: 바이어스는 −slope·|pos_i − pos_j|로, 거리에 따라 커지는 "
    "벌점입니다. 이 헤드의 경사(slope)는 {slope}이며, 입력으로 주어졌습니다.",
    "note.alibi_bloom": "BLOOM은 대신 +slope·j(Key 위치)를 더합니다. 인과 마스크 아래에서는 "
    "−slope·|i − j|와 한 행의 모든 칸에서 같은 양만큼 차이 나므로 가중치는 같지만, 여기 "
    "보이는 바이어스 더한 스코어는 다릅니다.",
    "note.alibi_and_bias": "B는 ALiBi의 −{slope}·|pos_i − pos_j|에 주어진 score_bias를 더한 "
    "것입니다.",
    "note.score_bias": "숫자로 주어진 바이어스(T5의 상대 위치 바이어스나 더하는 마스크)로, "
    "스케일링 뒤에 더합니다.",
    "note.sinks": "헤드 {head}의 싱크(σ = {sink})는 모든 행의 소프트맥스에 열 하나로 "
    "더해집니다. 행의 최댓값 m은 스코어들과 σ 가운데에서 고르고, e^(σ − m)도 합에 "
    "들어갑니다. 나눈 뒤에는 이 열을 버리므로 가중치 한 행의 합은 1보다 작습니다. 싱크가 "
    "가져간 몫은 어떤 토큰에도 가지 않습니다(Query가 특별히 볼 곳이 없을 때 주의를 비워 둘 수 "
    "있습니다).",
    "note.sinks_weights": "각 행을 나누는 합에는 싱크의 e^(σ − m)도 들어 있어 0이 되지 않습니다. "
    "모든 Key가 가려진 Query는 가중치 전부를 싱크에 줍니다.",
    "sinks.count": "sinks에는 헤드마다 로짓이 하나씩 있어야 합니다. heads = {heads}인데 "
    "{count}개가 주어졌습니다.",
    "note.softcap": "c = {cap}: 모든 스코어 s가 {cap}·tanh(s / {cap}) 값으로 바뀌어, −{cap}보다 "
    "크고 {cap}보다 작은 범위에 들어갑니다. 마스크는 그다음입니다.",
    "note.causal_positions": "위치에 따른 인과 마스크: pos_j ≤ pos_i이면 Query i가 Key j를 "
    "볼 수 있습니다.",
    "note.causal_bottomright": "Query {n}개, Key {m}개의 인과 마스크를 캐시로 디코딩할 때처럼 "
    "오른쪽 아래에 맞춥니다. Query는 위치 {first}…에 있고, 각자 자기 위치까지의 Key를 모두 "
    "봅니다.",
    "note.chunk": "청크 어텐션 C = {chunk}: 위치를 {chunk}개씩 청크로 나누고 (0…{last}, 그다음 "
    "{chunk}개, …), 각 Query는 자기 청크 안에서 자기 위치까지의 Key만 봅니다 (⌊pos_j / C⌋ = "
    "⌊pos_i / C⌋이고 pos_j ≤ pos_i: Llama 4의 청크 층, Hugging Face의 attention_chunk_size와 "
    "같은 규칙). 슬라이딩 윈도우와 달리, 청크의 첫 위치에 있는 Query는 앞의 Key를 하나도 보지 "
    "않습니다.",
    "note.window": "슬라이딩 윈도우 W = {window}: 각 Query는 자기 위치를 포함한 최근 W개 위치를 "
    "봅니다 (pos_i − pos_j < W, Mistral과 Hugging Face의 sliding_window와 같음). 즉 앞의 "
    "{before}개와 자기 자신입니다. 다른 코드는 다르게 셀 수 있으니 (Query 앞의 W개, 또는 양쪽 "
    "W개) 비교하기 전에 확인하세요.",
    "note.exact_stops_root": "여기부터는 정확한 분수가 없습니다: RMSNorm은 제곱근으로 나누는데, "
    "대부분의 입력에서 무리수입니다.",
    "note.exact_stops_rope": "여기부터는 정확한 분수가 없습니다: 회전은 cos φ와 sin φ를 "
    "곱하는데, 이 값들은 0이 아닌 대수적 수 φ에서 언제나 무리수이고, 여기의 φ = 위치 × ω도 "
    "그런 수입니다(린데만–바이어슈트라스 정리).",
    "note.exact_stops_tanh": "여기부터는 정확한 분수가 없습니다: 0이 아닌 유리수의 tanh는 "
    "무리수입니다.",
    "positions.not_list": "{field}: 정수 {count}개의 목록이어야 합니다 ({what}마다 하나).",
    "positions.length": "{field}의 항목은 {length}개인데 {what}의 수는 {count}입니다: 행마다 "
    "위치가 하나씩 있어야 합니다",
    "positions.not_integer": "{field}: 정수(토큰의 위치)여야 합니다",
    "positions.too_large": "{field}: ±{limit} 범위를 넘습니다",
    "variant.not_positive": "{field}: 0보다 큰 수여야 합니다. 받은 값: {value}",
    "variant.not_whole": "{field}: 정수여야 합니다. 받은 값: {value}",
    "variant.length": "{field}의 수는 {length}개인데 {count}개({what})가 필요합니다",
    "rope.not_object": 'rope는 true, theta 값(10000), 또는 {{"theta": 10000, "style": "half"}} '
    "같은 객체여야 합니다. 받은 값: {value}",
    "rope.unknown_key": "rope에는 {key} 키가 없습니다. 키: {known}",
    "rope.style": 'rope.style은 "half"(i와 i + R/2: LLaMA, GPT-NeoX) 또는 "pairs"(2i와 2i+1: '
    "GPT-J)여야 합니다. 받은 값: {value}",
    "rope.dims": "rope.dims는 짝수이고 d_k = {d_k} 이하여야 합니다(받은 값 {dims}): 차원은 한 헤드 "
    "안에서 둘씩 짝지어 회전합니다",
    "alibi.count": "alibi 목록의 길이는 {count}인데 heads = {heads}입니다: 헤드마다 경사 "
    "하나가 필요합니다 (논문의 경사는 alibi: true)",
    "alibi.kind": "alibi는 true(논문의 경사) 또는 헤드마다 경사 하나씩의 목록이어야 합니다. "
    "받은 값: {value}",
    "score_bias.shape": "score_bias는 {shape}입니다. n×m = {n}×{m}(모든 헤드에 하나) 또는 "
    "H×n×m = {heads}×{n}×{m}(헤드마다 하나)이어야 합니다",
    "causal_align.unknown": 'causal_align은 "top-left" 또는 "bottom-right"여야 합니다. 받은 값: '
    "{value}",
    "chunk.needs_causal": "chunk_size = {chunk}에는 인과 마스크가 필요합니다 "
    "(지금 마스크: {mask}). 청크 어텐션은 각 Query에 자기 청크 안에서 "
    "자기 위치까지의 Key만 남깁니다. 다른 모양은 0/1 마스크로 주세요",
    "window.needs_causal": "window = {window}에는 인과 마스크가 필요합니다 (지금 마스크: {mask}). "
    "슬라이딩 윈도우는 각 Query 앞의 가장 최근 Key만 남깁니다. 양쪽 윈도우는 0/1 마스크로 "
    "주세요",
    "positional.needs_x": "positional은 X에 위치 인코딩을 더하는데, Q, K, V를 직접 주었으므로 "
    "더할 X가 없습니다",
    "positional.unknown": 'positional은 "sinusoidal" 또는 n×d_model 행렬이어야 합니다. 받은 값: '
    "{value}",
    "positional.shape": "positional은 {shape}입니다. n×d_model = {n}×{d}이어야 합니다: 토큰마다 "
    "한 행, X와 같은 너비",
    # ---- q/k norm kinds, attention temperature (issue 22) ----
    "ui.variant.qk_layernorm": "q/k 정규화(LayerNorm)",
    "ui.variant.qk_norm_projection": "선형 투영 전체에 걸친 q/k 정규화",
    "ui.variant.qk_norm_per_head": "헤드마다 다른 q/k 정규화 가중치",
    "ui.variant.qk_norm_after_rope": "RoPE 다음의 q/k 정규화",
    "stage.q_layernorm.title": "Query 정규화 (LayerNorm)",
    "stage.q_layernorm.why": "Query의 각 행에서 평균을 빼고 표준편차로 나눈 뒤, 차원마다 학습된 "
    "가중치를 곱하고 학습된 편향을 더합니다(Cohere, StableLM, Phi). q의 크기를 일정한 범위로 "
    "제한하면 학습 중에 스코어가 한없이 커지지 않습니다.",
    "stage.k_layernorm.title": "Key 정규화 (LayerNorm)",
    "stage.k_layernorm.why": "Key의 각 행도 같습니다: 행마다 (x − μ) / √(mean((x − μ)²) + ε) · "
    "w + b.",
    "note.layernorm": "행마다 (x − μ) / σ · w + b. μ는 행의 평균, σ = √(mean((x − μ)²) + ε), "
    "ε = {eps}.",
    "note.qk_norm_projection": "평균(그리고 제곱의 평균)은 헤드로 나누기 전의 선형 투영 행 전체, "
    "곧 모든 헤드의 수 {width}개에 걸쳐 구합니다(OLMo 2). 그래서 한 토큰에서는 모든 헤드의 행이 "
    "같은 수로 나뉩니다.",
    "note.qk_norm_after_rope": "여기서는 정규화가 회전 다음에 옵니다(HunYuan). RoPE가 먼저 행을 "
    "돌리고, 정규화가 돌아간 행의 크기를 맞춥니다.",
    "hint.layernorm": "{cell} = ({src}[{i},{j}] − μ) / σ × w[{j}] + b[{j}]. μ는 {src}의 행 {i}의 "
    "평균이고, σ = √(mean((x − μ)²) + ε)도 그 행에서 구합니다.",
    "mistake.layernorm_mean_kept": "이 값은 행의 평균을 빼지 않았습니다(RMSNorm처럼 "
    "x / √(mean(x²) + ε)). LayerNorm은 먼저 행의 평균 μ를 빼고 σ로 나눕니다.",
    "mistake.layernorm_bias_missing": "이 값은 편향을 빠뜨렸습니다. LayerNorm은 차원 j마다 w_j를 "
    "곱한 다음 b_j를 더합니다.",
    "stage.grad_back.layernorm.title": "q/k LayerNorm을 거슬러 역전파",
    "stage.grad_back.layernorm.why": "정규화는 ρ = 1/σ로 x̂ = (x − μ)·ρ를 만들고 x̂·w + b를 "
    "냈습니다. 역전파는 기울기에 같은 비율을 곱한 ρ·(w ⊙ g)에서, 정규화가 상쇄하는 두 성분을 "
    "뺍니다: 평균(행 전체의 이동)과 x̂ 방향의 성분(퍼짐의 변화)입니다.",
    "qk_norm.not_object": 'qk_norm은 {{"kind": "layer", "over": "head"}} 같은 객체여야 '
    "합니다. 받은 값: {value}",
    "qk_norm.unknown_key": "qk_norm에는 {key} 키가 없습니다. 키는 다음과 같습니다: {known}",
    "qk_norm.kind": 'qk_norm.kind는 "rms"(x / √(mean(x²) + ε) · w: Qwen3, OLMo 2) 또는 '
    '"layer"((x − μ) / σ · w + b: Cohere, StableLM, Phi)여야 합니다. 받은 값: {value}',
    "qk_norm.over": 'qk_norm.over는 "head"(헤드마다 d_k개의 수) 또는 "projection"(헤드로 '
    "나누기 전의 선형 투영 행 전체: OLMo 2)여야 합니다. 받은 값: {value}",
    "qk_norm.after_rope": "qk_norm.after_rope는 true(회전 다음의 정규화: HunYuan) 또는 false(회전 "
    "전, 기본값)여야 합니다. 받은 값: {value}",
    "qk_norm.bias_needs_layer": 'qk_norm.bias는 LayerNorm의 편향입니다. "kind": "layer"와 '
    "함께 주세요(RMSNorm에는 편향이 없습니다)",
    "qk_norm.bias_not_object": 'qk_norm.bias는 q_norm, k_norm과 모양이 같은 {{"q": […], "k": '
    "[…]}} 객체여야 합니다. 받은 값: {value}",
    "qk_norm.bias_without_weight": "qk_norm.bias.{side} 값은 있는데 {side}_norm 값이 "
    "없습니다. 편향은 정규화 가중치와 함께 씁니다",
    "qk_norm.needs_weights": "qk_norm은 q/k 정규화의 방식을 말하는데 q_norm도 k_norm도 "
    "없습니다. 정규화의 가중치를 주세요",
    "qk_norm.shape": "{field}의 모양은 {shape}입니다. d_k = {d_k}개의 수(모든 헤드에 벡터 "
    "하나) 또는 {letter}×d_k개(= {count}×{d_k}개, 헤드마다 한 행: q_norm은 Query 헤드 H개, "
    "k_norm은 K/V 헤드 G개)가 필요합니다",
    "qk_norm.length": "{field}의 수는 {length}개인데 {d_k}개(d_k, 모든 헤드에 벡터 하나) 또는 "
    "{letter}×d_k개(= {count}×{d_k}개, 헤드마다 한 행: q_norm은 Query 헤드 H개, k_norm은 K/V 헤드 "
    "G개)가 필요합니다",
    "qk_norm.projection_shape": "{field}의 모양은 {shape}입니다. 선형 투영 전체에 걸친 "
    "정규화에는 {letter}·d_k = {count}×{d_k} = {width}개의 수, 곧 투영의 열마다 하나가 "
    "필요합니다",
    "qk_norm.projection_backward": '역전파는 "over": "projection"을 헤드별로 따라갈 수 '
    "없습니다. 각 헤드의 정규화가 모든 헤드의 행을 읽으므로, 한 헤드의 기울기에 다른 모든 "
    '헤드의 기울기가 필요합니다. --backward와 qkvcalc train에는 헤드별 정규화("over": '
    '"head")가 필요합니다. --backward 없는 explain은 이 정규화를 보여 줍니다',
    "qk_norm.projection_decode": 'KV 캐시는 "over": "projection"을 받을 수 없습니다. 각 '
    "단계마다 새 토큰의 선형 투영 행 전체가 필요합니다. decode 없이 실행하세요",
    "ui.variant.attn_temperature": "어텐션 온도",
    "stage.q_temp.title": "Query에 곱하는 어텐션 온도",
    "stage.q_temp.why": "Query의 각 행에 그 행만의 인수 τᵢ를 곱합니다. 뒤쪽 위치일수록 "
    "큽니다(RoPE가 없는 Llama 4의 층). Key가 많으면 먼 Query의 스코어가 평평해지는데, q를 키우면 "
    "그 Query의 소프트맥스가 다시 뚜렷해집니다.",
    "note.attn_temperature": "Query 행마다의 τ: {factors}.",
    "note.attn_temperature_llama4": "τᵢ = log(1 + ⌊(positions[i] + 1) / {floor_scale}⌋) · "
    "{attn_scale} + 1 (Llama 4의 attn_temperature_tuning). 위치 {floor_scale} − 2까지는 1이고, "
    "그 뒤로는 위치 {floor_scale}개마다 한 계단씩 커집니다.",
    "note.exact_stops_temperature": "여기서부터는 소수입니다. 인수 τ를 소수로 다룹니다"
    "(Llama 4의 τ는 로그입니다).",
    "hint.attn_temperature": "{cell} = {src}[{i},{j}] × τ[{i}]: Query 행 {i}의 인수를 곱합니다.",
    "stage.grad_back.row_scale.title": "어텐션 온도를 거슬러 역전파",
    "stage.grad_back.row_scale.why": "Query의 i번째 행에 τᵢ를 곱했으므로, 그 기울기에도 같은 "
    "τᵢ를 곱합니다: dQ[i, :] = τᵢ · dQ_temp[i, :].",
    "attn_temperature.kind": "attn_temperature는 Query 행마다 인수 하나씩인 리스트이거나 "
    '{{"floor_scale": 8192, "attn_scale": 0.1}} 같은 객체(Llama 4)여야 합니다. 받은 값: '
    "{value}",
    "attn_temperature.count": "attn_temperature의 인수는 {count}개인데 Query는 {n}개입니다. "
    "Query 행마다 인수가 하나씩 필요합니다",
    "attn_temperature.unknown_key": "attn_temperature에는 {key} 키가 없습니다. 키는 다음과 "
    "같습니다: {known}",
    "attn_temperature.needs_both": "객체로 준 attn_temperature에는 floor_scale과 attn_scale이 "
    "모두 필요합니다: τᵢ = log(1 + ⌊(positions[i] + 1) / floor_scale⌋) · attn_scale + 1",
    "attn_temperature.decode_list": 'KV 캐시에는 리스트가 아니라 규칙({{"floor_scale": …, '
    '"attn_scale": …}})으로 준 attn_temperature가 필요합니다. 프롬프트 행의 리스트에는 새 '
    "Query의 인수가 없습니다",
    # ---- multi-head latent attention (issue 22, item 3: DeepSeek-V2/V3, Kimi) ----------
    "ui.variant.mla": "멀티헤드 잠재 어텐션 (r_q = {rank_q}, r_kv = {rank}, d_R = {rope}, "
    "d_C = {nope})",
    "ui.variant.mla_full_q": "멀티헤드 잠재 어텐션 (Query는 W_Q로, r_kv = {rank}, "
    "d_R = {rope}, d_C = {nope})",
    "stage.c_q.title": "Query 잠재 벡터",
    "stage.c_q.why": "멀티헤드 잠재 어텐션은 먼저 각 토큰의 X를 짧은 잠재 벡터 c_Q = X·W_DQ로 "
    "압축합니다 (DeepSeek의 q_a_proj). 모든 헤드의 Query를 여기서 만들므로, 넓은 W_Q 하나 대신 "
    "얇은 행렬 두 개를 둡니다.",
    "stage.c_q_norm.title": "정규화한 Query 잠재 벡터 (RMSNorm)",
    "stage.c_q_norm.why": "헤드가 읽기 전에 잠재 벡터를 제곱평균제곱근이 약 1이 되도록 나누고 "
    "차원마다 학습된 가중치를 곱합니다 (q_a_layernorm).",
    "stage.c_kv.title": "Key/Value 잠재 벡터",
    "stage.c_kv.why": "Key와 Value는 잠재 벡터 c_KV = X·W_DKV 하나를 함께 씁니다 (DeepSeek의 "
    "kv_a_proj_with_mqa의 앞 r_kv개 열). 모든 헤드의 Key와 Value를 여기서 만들므로, 캐시는 "
    "헤드마다의 K와 V 대신 c_KV를 보관할 수 있습니다.",
    "stage.c_kv_norm.title": "정규화한 Key/Value 잠재 벡터 (RMSNorm)",
    "stage.c_kv_norm.why": "c_KV에도 같은 RMSNorm을 씁니다 (kv_a_layernorm): 행마다 "
    "x / √(mean(x²) + ε) · w.",
    "stage.k_rope.title": "공유 회전 Key",
    "stage.k_rope.why": "RoPE는 잠재 벡터를 거쳐 갈 수 없습니다. C_KV와 헤드의 W_UK 사이의 "
    "회전은 위치마다 달라서 W_UK를 Query 쪽에 합쳐 둘 수 없기 때문입니다. 그래서 따로 둔 몇 개의 "
    "열 k_R = X·W_KR (kv_a_proj_with_mqa의 마지막 d_R개 열)이 위치를 싣습니다. 모든 헤드가 "
    "쓰는 Key 하나이고, 토큰마다 한 번 회전합니다.",
    "stage.k_nope.title": "잠재 벡터에서 만든 Key (위치 없음)",
    "stage.k_nope.why": "헤드마다 자기 몫의 Key, K_C = C_KV·W_UK: 토큰마다 위치를 싣지 않는 "
    "d_C개의 수입니다.",
    "stage.mla_q.title": "잠재 벡터에서 만든 Query",
    "stage.mla_q.why": "정규화한 잠재 벡터에서 헤드마다 Query를 만듭니다. RoPE가 회전할 d_R개 "
    "열이 (여기서는) 먼저 오고, 그다음 Key의 K_C와 만날 d_C개 열이 옵니다.",
    "stage.mla_q_full.title": "Query 선형 투영",
    "stage.mla_q_full.why": "Query 잠재 벡터 없이 (q_lora_rank가 None) 헤드마다 X에서 바로 "
    "Query를 만듭니다. RoPE가 회전할 d_R개 열이 (여기서는) 먼저 오고, 그다음 Key의 K_C와 만날 "
    "d_C개 열이 옵니다.",
    "stage.mla_k.title": "Key: 공유 회전 부분과 헤드의 몫",
    "stage.mla_k.why": "헤드의 Key는 k_R (모든 헤드에서 같음) 옆에 자기 K_C를 붙인 것입니다. "
    "스코어 q·k는 두 부분의 내적의 합, 곧 q_R·k_R (위치) 더하기 q_C·K_C (내용)입니다.",
    "stage.mla_v.title": "잠재 벡터에서 만든 Value",
    "stage.mla_v.why": "헤드마다 Value, V = C_KV·W_UV: Key와 같은 잠재 벡터에 kv_b_proj의 다른 "
    "열을 곱합니다.",
    "note.mla_norm": "행마다 잠재 벡터 {latent}에 x / √(mean(x²) + ε) · w, ε = {eps}.",
    "note.mla_c_q": "토큰마다 X의 수 {d_model}개 대신 r_q = {rank}개의 수.",
    "note.mla_c_kv": "토큰마다 r_kv = {rank}개의 수입니다. k_R의 {rope}개와 함께 캐시는 토큰마다 "
    "{cached}개의 수를 보관하며, 모든 헤드의 K와 V라면 H·(d_k + d_v) = "
    "{heads}·({d_k} + {d_v}) = {full}개가 듭니다.",
    "note.mla_k_rope": "d_R = {rope}개 열을 헤드 {heads}개가 모두 함께 씁니다. RoPE는 각 헤드의 "
    "Key에서 이 열들을 앞의 d_R개 열로 회전합니다.",
    "note.mla_q_order": "qkvcalc는 헤드마다 회전할 d_R = {rope}개 열을 먼저, 나머지 d_C = "
    "{nope}개 열을 그다음에 둡니다 (DeepSeek의 가중치는 반대 순서). Q·Kᵀ는 열에 걸쳐 더하므로 "
    "스코어는 같습니다.",
    "note.mla_join": "열 1부터 {rope}까지가 모든 헤드에서 같은 k_R이고, 다음 {nope}개 열이 이 "
    "헤드의 K_C입니다.",
    "hint.mla_join": "{cell}: K의 {j}번째 열은 j ≤ d_R이면 k_R의 열, 아니면 K_C의 열을 그대로 "
    "옮긴 것입니다.",
    "mistake.mla_latent_unnormed": "이 값은 RMSNorm 전의 {latent} 벡터를 썼습니다. 헤드가 "
    "읽는 것은 정규화한 잠재 벡터 RMSNorm({latent})입니다.",
    "mistake.mla_join_order": "이 값은 DeepSeek의 가중치처럼 K_C를 k_R 앞에 두었습니다. "
    "qkvcalc의 Key는 공유 k_R이 먼저, 그다음 K_C입니다 (Query의 열도 같은 순서).",
    "stage.c_kv_cache.title": "잠재 벡터 캐시 (C_KV)",
    "stage.c_kv_cache.why": "멀티헤드 잠재 어텐션은 헤드마다의 Key와 Value가 아니라 지금까지의 "
    "모든 토큰의 정규화한 잠재 벡터 C_KV를 캐시에 둡니다. 각 스텝은 새 토큰의 행을 덧붙입니다. "
    "여기서는 알아보기 쉽도록 모든 헤드가 캐시에서 K_C와 V를 다시 만들지만, 실제 추론은 W_UK를 "
    "Query에, W_UV를 W_O에 합쳐 넣어 이것들을 만들지 않습니다.",
    "stage.k_rope_cache.title": "회전 Key 캐시 (k_R)",
    "stage.k_rope_cache.why": "캐시는 C_KV 옆에 공유 Key k_R을 자기 위치에서 한 번 회전해 "
    "보관합니다. 모든 헤드가 이것을 Key의 앞 d_R개 열로 읽습니다.",
    "note.mla_cache": "드는 비용: 토큰마다 r_kv + d_R = {rank} + {rope} = {per_token}개의 수, 토큰 "
    "{tokens}개에 {total}개입니다. 모든 헤드의 K와 V를 두는 캐시라면 토큰마다 H·(d_k + d_v) = "
    "{heads}·({d_k} + {d_v}) = {full}개 (토큰 {tokens}개에 {full_total}개)가 듭니다.",
    "note.mla_from_cache": "여기서는 알아보기 쉽도록 스텝마다 캐시의 C_KV({rows} × r_kv)에서 "
    "다시 만듭니다. 캐시에는 C_KV와 k_R만 있고 K_C나 V는 없습니다. 실제 추론(DeepSeek-V2 논문, "
    "vLLM)도 이것들을 만들지 않습니다: W_UK를 Query 쪽에 합쳐 넣고(Query가 C_KV와 바로 "
    "만납니다) W_UV를 W_O에 합쳐 넣습니다.",
    "mistake.mla_norm_sum_not_mean": "이 값은 행의 길이 √(Σ x²)로 나눴습니다. RMSNorm은 평균의 "
    "제곱근 √(mean(x²) + ε)로 나누며, 평균은 잠재 벡터의 {over} = {count}개 차원에 걸쳐 냅니다.",
    "mla.not_object": 'mla는 {{"wq_a": …, "q_a_norm": …, "wq_b": …, "wkv_a": …, '
    '"kv_a_norm": …, "wkv_b": …, "rope_dims": 2}} 같은 객체여야 합니다. 받은 값: {value}',
    "mla.unknown_key": "mla에는 {key} 키가 없습니다. 키는 다음과 같습니다: {known}",
    "mla.replaces": "mla와 함께 {key} 키를 줄 수 없습니다. 잠재 벡터가 W_Q, W_K, W_V (와 그 "
    "바이어스)를 대신하며, Key와 Value는 X에서 만듭니다",
    "mla.missing": "mla에 다음이 필요합니다: {missing} (docs/input-format.md 참고)",
    "mla.two_queries": "mla가 Query를 두 번 줍니다. wq (Q = X·W_Q)와 wq_a, q_a_norm, wq_b "
    "(Query 잠재 벡터를 거침) 중 하나만 주세요",
    "mla.query_latent": "mla.wq_b에는 mla.wq_a와 mla.q_a_norm이 필요합니다: "
    "Q = RMSNorm(X·W_DQ)·W_UQ",
    "mla.kv_heads": "mla는 Query 헤드마다 Key와 Value가 하나씩입니다. kv_heads는 {kv_heads}인데 "
    "헤드는 {heads}개입니다",
    "mla.rope_odd": "mla.rope_dims의 값 {rope}: RoPE는 차원을 둘씩 짝지어 회전하므로 짝수여야 "
    "합니다",
    "mla.rows": "{field}의 모양은 {shape}인데, 열이 {rows}개인 {what}에 곱해집니다. 행이 "
    "{rows}개여야 합니다",
    "mla.norm_length": "{field}의 수는 {length}개인데 {weight}에서 나오는 열은 {rank}개입니다. "
    "잠재 벡터의 열마다 가중치가 하나씩 필요합니다",
    "mla.q_width": "{field}의 열은 {cols}개입니다. H = {heads}, d_R = rope_dims = {rope}일 때 "
    "H·(d_C + d_R)개, 곧 {heads}의 배수이면서 헤드마다 {rope}개보다 많아야 합니다",
    "mla.kv_a_width": "mla.wkv_a의 열은 {cols}개입니다. d_R = rope_dims = {rope}일 때 "
    "r_kv + d_R개, 곧 {rope}개보다 많아야 합니다",
    "mla.kv_b_width": "mla.wkv_b의 열은 {cols}개입니다. H = {heads}, d_C = {nope} (Query에서 "
    "정해짐)일 때 H·(d_C + d_v)개, 곧 {heads}의 배수이면서 헤드마다 {nope}개보다 많아야 합니다",
    "mla.rope_dims": "rope.dims의 값 {dims}: mla는 d_R = {rope}개 열을 회전하므로 rope에 다음을 "
    '주세요: "dims": {rope}',
    "mla.qk_norm": "mla와 함께 {key} 키를 줄 수 없습니다. 정규화는 잠재 벡터에 있습니다 "
    "(q_a_norm, kv_a_norm)",
    # ---- DeepSeek-V4's one key/value head in mla (shared_kv; qkvcalc/ops/mla.py) ----
    "stage.mla_shared_c_kv.title": "하나뿐인 Key/Value 헤드의 투영",
    "stage.mla_shared_c_kv.why": "DeepSeek-V4는 토큰마다 Key/Value 벡터 하나, c_KV = "
    "X·W_DKV(kv_proj)를 만듭니다. Query 헤드 하나만큼 넓고, 모든 헤드의 Key이자 Value입니다. "
    "qkvcalc는 앞 열을 회전하므로 마지막 d_R개 열(회전 열)을 앞으로 가져옵니다.",
    "stage.mla_shared_c_kv_norm.title": "정규화한 Key/Value 헤드(RMSNorm)",
    "stage.mla_shared_c_kv_norm.why": "행 전체에 대한 RMSNorm(kv_norm)입니다: x / "
    "√(mean(x²) + ε) · w, 회전 열도 포함합니다.",
    "stage.mla_shared_k.title": "Key: 하나뿐인 Key/Value 헤드",
    "stage.mla_shared_k.why": "모든 헤드의 Key가 C_KV 그 자체입니다. Key 헤드 하나를 모든 Query "
    "헤드가 읽습니다(멀티 Query 어텐션, MQA).",
    "stage.mla_shared_v.title": "Value: Key와 같은 벡터",
    "stage.mla_shared_v.why": "모든 헤드의 Value도 C_KV입니다(K = V). 토큰의 점수를 매기는 수가 "
    "곧 그 토큰이 전하는 수입니다.",
    "note.mla_shared_kv": "토큰마다 d_k = {d_k}개의 수가 {heads}개 헤드 모두의 Key와 Value를 "
    "함께 맡습니다. 1–{rope}번 열은 W_DKV의 마지막 {rope}개(회전 열), 그다음이 앞의 "
    "{nope}개입니다.",
    "note.mla_shared_head": "모든 헤드에 같은 C_KV: K = V.",
    "note.mla_shared_norm": "행마다 c_KV(잠재 벡터가 아니라 Key/Value 헤드 그 자체)의 {width}개 "
    "열에 x / √(mean(x²) + ε) · w, ε = {eps}.",
    "stage.mla_shared_c_kv_cache.title": "Key/Value 헤드의 캐시 (C_KV)",
    "stage.mla_shared_c_kv_cache.why": "DeepSeek-V4는 하나뿐인 Key/Value 헤드를 모든 헤드를 위해 "
    "한 번만 캐시합니다: 지금까지 모든 토큰의 C_KV 행이고(vo_rope에서는 토큰의 위치에서 돌린 "
    "행으로, Key와 Value가 모두 그것을 받습니다), 스텝마다 새 토큰의 행을 덧붙입니다. 모든 헤드가 "
    "이 캐시 하나에서 Key와 Value를 읽습니다.",
    "stage.mla_shared_k_rope.title": "C_KV의 회전 열",
    "stage.mla_shared_k_rope.why": "Key는 C_KV의 처음 d_R개 열(회전 열)을 토큰의 위치만큼 돌리고, "
    "Value는 돌리지 않습니다: 이 열들을 따로 떼어 제 위치에서 한 번 돌리고, 돌린 채로 "
    "캐시합니다.",
    "stage.mla_shared_k_rope_cache.title": "돌린 회전 열의 캐시 (k_R)",
    "stage.mla_shared_k_rope_cache.why": "캐시는 C_KV 옆에 그 회전 열 d_R개를 제 위치에서 한 번 "
    "돌려 둡니다: 모든 헤드가 이를 Key의 처음 d_R개 열로 읽습니다.",
    "stage.mla_shared_k_nope.title": "Key에서 돌지 않는 열",
    "stage.mla_shared_k_nope.why": "캐시에 있는 C_KV의 마지막 d_C개 열을 그대로: 모든 헤드의 "
    "Key에서 위치를 담지 않는 부분입니다.",
    "stage.mla_shared_k_join.title": "Key: 돌린 열과 나머지 열",
    "stage.mla_shared_k_join.why": "헤드의 Key는 처음 d_R개 열을 돌린 C_KV입니다: 캐시의 돌린 "
    "열 k_R 옆에 C_KV의 나머지 d_C개 열을 놓으며, 모든 헤드에서 같습니다.",
    "stage.mla_shared_v_cache.title": "Value: 캐시된 Key/Value 헤드",
    "stage.mla_shared_v_cache.why": "모든 헤드의 Value는 캐시의 C_KV 그대로입니다: 회전 열을 "
    "돌리는 것은 Key뿐이므로 돌리지 않은 채입니다.",
    "note.mla_shared_cache": "드는 비용: 토큰마다 d_k = {per_token}개의 수로 모든 헤드(헤드 "
    "{heads}개)가 같은 것을 읽고, 토큰 {tokens}개에 {total}개입니다. 모든 헤드의 K와 V를 두는 "
    "캐시라면 토큰마다 H·(d_k + d_v) = {heads}·({d_k} + {d_v}) = {full}개 (토큰 {tokens}개에 "
    "{full_total}개)가 듭니다.",
    "note.mla_shared_cache_rope": "드는 비용: 토큰마다 d_k + d_R = {d_k} + {rope} = "
    "{per_token}개의 수(C_KV, 그리고 Key를 위해 돌린 그 회전 열)로 모든 헤드(헤드 {heads}개)가 "
    "같은 것을 읽고, 토큰 {tokens}개에 {total}개입니다. 모든 헤드의 K와 V를 두는 캐시라면 토큰마다 "
    "H·(d_k + d_v) = {heads}·({d_k} + {d_v}) = {full}개 (토큰 {tokens}개에 {full_total}개)가 "
    "듭니다.",
    "note.mla_shared_cache_turned": "드는 비용: 토큰마다 d_k = {per_token}개의 수로 모든 헤드(헤드 "
    "{heads}개)가 같은 것을 읽고(회전 열을 토큰의 위치에서 한 번 돌린 C_KV: vo_rope에서는 Value도 "
    "Key처럼 돌린 것을 받습니다), 토큰 {tokens}개에 {total}개입니다. 모든 헤드의 K와 V를 두는 "
    "캐시라면 토큰마다 H·(d_k + d_v) = {heads}·({d_k} + {d_v}) = {full}개 (토큰 {tokens}개에 "
    "{full_total}개)가 듭니다.",
    "note.mla_shared_join": "열 1부터 {rope}까지는 캐시의 돌린 k_R로 모든 헤드에서 같고, 다음 "
    "{nope}개는 C_KV 자신의 열입니다.",
    "note.mla_shared_v_cache": "V = C_KV_cache: Value는 돌리지 않은 C_KV를, Key는 돌린 것을 "
    "받습니다.",
    "mla.shared_kv": "mla.shared_kv는 true(Key/Value 헤드 하나, K = V = C_KV) 또는 false여야 "
    "합니다. 받은 값: {value}",
    "mla.shared_kv_b": "mla.shared_kv와 함께 mla.wkv_b를 줄 수 없습니다: 하나뿐인 Key/Value "
    "헤드는 업 프로젝션 없이 C_KV 그 자체입니다",
    "mla.shared_width": "mla.wkv_a의 열이 {cols}개입니다. mla.shared_kv에서는 W_DKV만이고 모든 "
    "헤드의 Key를 만드므로 d_k = d_C + d_R = {nope} + {rope} = {d_k}개 열이어야 합니다",
    # ---- multi-head latent attention's backward (qkvcalc/ops/mla.py) ----
    "stage.grad_k_nope.title": "역전파: Key에서 헤드 자신의 부분",
    "stage.grad_k_nope.why": "K = [k_R | K_C]는 공유 회전 Key와 헤드 자신의 열을 나란히 "
    "놓았으므로, 헤드의 K_C는 dK의 마지막 d_C개 열을 그대로 돌려받습니다.",
    "stage.grad_k_rope.title": "역전파: 공유 회전 Key의 기울기",
    "stage.grad_k_rope.why": "모든 헤드의 Key가 같은 k_R로 시작하므로, k_R은 모든 헤드를 거쳐 "
    "손실에 닿습니다. 그 기울기는 각 헤드 dK의 처음 d_R개 열을 더한 것입니다 (여러 번 읽힌 "
    "행렬의 경로들을 연쇄 법칙이 더합니다).",
    "note.grad_shared": "{x} → Key {count}개(헤드마다 하나)가 읽으므로, 기울기는 그 몫 "
    "{count}개를 더합니다.",
    "note.grad_shared_whole": "{x}: 모든 헤드(헤드 {heads}개)가 이를 통째로 읽습니다({names}). "
    "그래서 기울기는 그 몫 {count}개를 모두 더합니다.",
    "stage.grad_c_q_norm.title": "역전파: Query 잠재 벡터 C_Q의 기울기",
    "stage.grad_c_q_norm.why": "각 헤드의 Query는 C_Q에 W_UQ의 자기 열을 곱한 것이므로, C_Q는 모든 "
    "헤드를 거쳐 손실에 닿습니다: dC_Q = dQ·W_UQᵀ, 곧 각 헤드의 dQ에 W_UQ의 자기 열을 전치해 "
    "곱하고 헤드들에 걸쳐 더합니다.",
    "stage.grad_c_kv_norm.title": "역전파: Key/Value 잠재 벡터 C_KV의 기울기",
    "stage.grad_c_kv_norm.why": "모든 헤드가 C_KV에서 K_C와 V를 만들므로, C_KV의 기울기는 헤드마다 "
    "두 경로를 더합니다: dC_KV = dK_C·W_UKᵀ + dV·W_UVᵀ, 헤드들에 걸쳐 더하며 손실에 닿는 항만 "
    "씁니다 (V의 항은 손실이 출력을 읽을 때만).",
    "stage.grad_back.mla_norm.title": "잠재 벡터의 RMSNorm을 거슬러 역전파",
    "stage.grad_back.mla_norm.why": "정규화는 잠재 벡터의 각 행에 ρ = 1/√(mean(x²) + ε)와 w를 "
    "곱했습니다. 그 역전파는 두 부분입니다: 기울기에 같은 비율을 곱한 ρ·(w ⊙ g)에서, 행의 "
    "길이만 바꾸는 부분(정규화가 상쇄하는 부분)을 뺍니다.",
    "stage.grad_wuq.title": "W_UQ의 기울기",
    "stage.grad_wuq.why": "각 헤드에서 Q = C_Q·W_UQ이므로 dW_UQ = C_Qᵀ·dQ이고, 각 헤드의 기울기는 "
    "자기 열에 놓입니다. 각 가중치는 토큰들에 걸쳐, 잠재 벡터의 수와 자기가 만든 Query 칸의 "
    "기울기의 곱을 모읍니다.",
    "stage.grad_wuk.title": "W_UK의 기울기",
    "stage.grad_wuk.why": "각 헤드에서 K_C = C_KV·W_UK이므로 dW_UK = C_KVᵀ·dK_C입니다. 헤드 자신의 "
    "Key 열은 여기서 배우고, 공유 회전 열은 W_KR에서 배웁니다.",
    "stage.grad_wuv.title": "W_UV의 기울기",
    "stage.grad_wuv.why": "각 헤드에서 V = C_KV·W_UV이므로 dW_UV = C_KVᵀ·dV입니다. 공유 잠재 "
    "벡터에서 각 헤드의 Value를 만드는 행렬의 변화입니다.",
    "stage.grad_wdq.title": "W_DQ의 기울기",
    "stage.grad_wdq.why": "c_Q = X·W_DQ이므로 dW_DQ = Xᵀ·dc_Q입니다. 이 축소 투영은 모든 헤드의 "
    "Query가 잠재 벡터에 요구한 것에서, 정규화를 거슬러 배웁니다.",
    "stage.grad_wdkv.title": "W_DKV의 기울기",
    "stage.grad_wdkv.why": "c_KV = X·W_DKV이므로 dW_DKV = Xᵀ·dc_KV입니다. 행렬 하나가 모든 헤드의 "
    "Key와 Value의 잠재 벡터를 만들므로, 잠재 벡터의 정규화를 거슬러 그 모두의 기울기를 "
    "모읍니다.",
    "stage.grad_wkr.title": "W_KR의 기울기",
    "stage.grad_wkr.why": "k_R = X·W_KR이므로 dW_KR = Xᵀ·dk_R입니다. 모든 헤드가 회전 Key를 함께 "
    "쓰므로, 그 가중치는 모든 헤드의 Key에서 한꺼번에 배웁니다.",
    "stage.grad_q_a_norm.title": "Query 잠재 벡터 정규화 가중치(q_a_norm)의 기울기",
    "stage.grad_q_a_norm.why": "행마다 C_Q = c_Q·ρ·w이므로, 각 가중치 wⱼ는 토큰들에 걸쳐 "
    "dC_Q[i, j]와 정규화된 칸 c_Q[i, j]·ρᵢ의 곱을 모읍니다.",
    "stage.grad_kv_a_norm.title": "Key/Value 잠재 벡터 정규화 가중치(kv_a_norm)의 기울기",
    "stage.grad_kv_a_norm.why": "행마다 C_KV = c_KV·ρ·w이므로, 각 가중치 wⱼ는 토큰들에 걸쳐 "
    "dC_KV[i, j]와 정규화된 칸 c_KV[i, j]·ρᵢ의 곱을 모읍니다.",
    "stage.grad_x.mla.title": "역전파: 입력 X의 기울기",
    "stage.grad_x.mla.why": "잠재 어텐션에서 X는 W_Q, W_K, W_V가 아니라 축소 투영과 공유 회전 "
    "Key로 들어갑니다 (c_Q = X·W_DQ, c_KV = X·W_DKV, k_R = X·W_KR). 다변수 연쇄 법칙은 그 "
    "경로들을 더합니다: dX = dc_Q·W_DQᵀ + dc_KV·W_DKVᵀ + dk_R·W_KRᵀ (Query 잠재 벡터가 없으면 "
    "첫 항 대신 dQ·W_Qᵀ). 이것이 아래 층으로 흘러가는 기울기입니다.",
    "note.mla_grad_q_order": "각 헤드의 열은 qkvcalc의 순서입니다: 회전 열 d_R = {rope}개가 "
    "먼저, 그다음 d_C = {nope}개. 주어진 {key} 안에서는 헤드의 마지막 {rope}개 열이므로, "
    "한 스텝은 그 자리로 되돌려 놓습니다.",
    "note.mla_grad_kv_b": "wkv_b는 헤드마다 W_UK의 d_C = {nope}개 열, 그다음 W_UV의 "
    "d_v = {d_v}개 열을 담습니다. 그 기울기도 dW_UK와 dW_UV를 같은 방식으로 번갈아 놓습니다.",
    "note.mla_grad_shared_order": "열은 단계의 순서입니다: W_DKV의 마지막 {rope}개(회전 열)가 "
    "먼저, 그다음 처음 {nope}개. qkvcalc train은 각 열을 wkv_a에서의 자리로 돌려놓습니다.",
    "stage.grad_mla_shared_c_kv_norm.title": "역전파: 하나뿐인 Key/Value 헤드 C_KV의 기울기",
    "stage.grad_mla_shared_c_kv_norm.why": "모든 헤드의 Key와 Value가 C_KV 그 자체이므로 (K = V "
    "= C_KV), C_KV는 헤드마다 두 번 손실에 닿습니다: dC_KV = Σₕ (dKₕ + dVₕ), 곧 모든 헤드의 dK와 "
    "dV를 통째로 더합니다 (가중치에 걸린 손실에서는 Value가 닿지 않으므로 Key의 것만).",
    "stage.grad_back.mla_shared_norm.title": "Key/Value 헤드의 RMSNorm을 거슬러 역전파",
    "stage.grad_back.mla_shared_norm.why": "정규화는 c_KV의 각 행에 ρ = 1/√(mean(x²) + ε)와 w를 "
    "곱했습니다. 그 역전파는 두 부분입니다: 기울기에 같은 비율을 곱한 ρ·(w ⊙ g)에서, 행의 "
    "길이만 바꾸는 부분(정규화가 상쇄하는 부분)을 뺍니다.",
    "stage.grad_mla_shared_wdkv.title": "W_DKV의 기울기",
    "stage.grad_mla_shared_wdkv.why": "c_KV = X·W_DKV이므로 dW_DKV = Xᵀ·dc_KV입니다. 행렬 하나가 "
    "모든 헤드의 Key와 Value를 만들므로, 정규화를 거슬러 그 모두의 기울기를 모읍니다.",
    "stage.grad_mla_shared_kv_a_norm.title": "Key/Value 헤드 정규화 가중치(kv_a_norm)의 기울기",
    "stage.grad_mla_shared_kv_a_norm.why": "행마다 C_KV = c_KV·ρ·w이므로, 각 가중치 wⱼ는 토큰들에 "
    "걸쳐 dC_KV[i, j]와 정규화된 칸 c_KV[i, j]·ρᵢ의 곱을 모읍니다 (열은 단계의 순서, 회전 열이 "
    "먼저).",
    "stage.grad_x.mla_shared.title": "역전파: 입력 X의 기울기",
    "stage.grad_x.mla_shared.why": "Key/Value 헤드가 하나일 때 X는 W_Q, W_K, W_V가 아니라 Query의 "
    "축소 투영과 W_DKV로 들어갑니다 (c_Q = X·W_DQ, c_KV = X·W_DKV). 다변수 연쇄 법칙은 그 "
    "경로들을 더합니다: dX = dc_Q·W_DQᵀ + dc_KV·W_DKVᵀ (Query 잠재 벡터가 없으면 첫 항 대신 "
    "dQ·W_Qᵀ). 이것이 아래 층으로 흘러가는 기울기입니다.",
    # ---- the sparse-attention indexer beside mla (qkvcalc/ops/indexer.py) ----
    "ui.variant.indexer": "희소 어텐션 인덱서 (인덱스 헤드 H_I = {heads}개, D = {dim}, "
    "top_k = {top_k}, RoPE {style})",
    "stage.index_q.title": "인덱서: Query",
    "stage.index_q.why": "인덱서는 Key를 고르기만 하는 가벼운 두 번째 어텐션입니다. 인덱서의 "
    "Query는 헤드들의 Query와 같은 Query 잠재 벡터(DeepSeek의 q_resid)에서 나오며, 토큰마다 "
    "작은 인덱스 헤드 H_I개를 가집니다.",
    "stage.index_k.title": "인덱서: Key",
    "stage.index_k.why": "토큰마다 Key 하나를 모든 인덱스 헤드가 함께 씁니다: X에서 바로 "
    "k_I = X·W_IK (인덱서의 wk).",
    "stage.index_k_norm.title": "인덱서: 정규화한 Key (LayerNorm)",
    "stage.index_k_norm.why": "인덱서 자신의 LayerNorm(k_norm, 가중치와 바이어스가 있음)을 Key에 "
    "적용합니다. 각 행에서 평균을 빼고 표준편차로 나눕니다.",
    "stage.index_q_rot.title": "인덱서: 회전한 Query (RoPE)",
    "stage.index_q_rot.why": "각 인덱스 헤드의 앞 d_R개 수를 층의 주파수로 토큰의 위치만큼 "
    "회전합니다. 그래서 인덱서도 두 토큰이 얼마나 떨어져 있는지 봅니다.",
    "stage.index_k_rot.title": "인덱서: 회전한 Key (RoPE)",
    "stage.index_k_rot.why": "Key의 앞 d_R개 수를 같은 방식으로, Key 자신의 위치에서 회전합니다.",
    "stage.index_weights.title": "인덱서: 인덱스 헤드마다의 가중치",
    "stage.index_weights.why": "토큰마다 각 인덱스 헤드를 얼마나 셀지 스스로 정합니다: "
    "w = X·W_w (weights_proj), 인덱스 헤드마다 가중치 하나이며 음수일 수도 있습니다.",
    "stage.index_scores.title": "인덱서: 인덱스 점수",
    "stage.index_scores.why": "인덱스 헤드마다 각 Key에 ReLU(q·k/√D) 점수를 줍니다. 관련 없어 "
    "보이는 Key는 0점이며 그보다 낮아지지 않습니다. 헤드들의 점수에 w/√H_I를 곱해 더하면 "
    "Query와 Key 쌍마다 수 하나가 나오며, 그 Key를 볼 가치가 얼마나 되는지 말해 줍니다.",
    "stage.index_masked.title": "인덱서: 마스크를 씌운 점수",
    "stage.index_masked.why": "먼저 인과 마스크입니다. Query가 볼 수 없는 Key는 −∞가 되어 "
    "선택될 수 없습니다.",
    "stage.index_topk.title": "인덱서: Query마다 top-k Key",
    "stage.index_topk.why": "각 Query는 인덱스 점수가 가장 큰 Key top_k개를 남깁니다 "
    "(1 = 남김). 이 선택은 매끄럽게 변하는 수가 아니라 고르기이므로 기울기가 없으며, "
    "transformers에서 인덱서는 torch.no_grad() 아래에서 실행됩니다.",
    "stage.index_mask.title": "인덱서: 인덱서가 주는 마스크",
    "stage.index_mask.why": "남긴 Key는 0, 남기지 않은 Key는 −∞입니다. 인과 마스크와 함께 "
    "모든 헤드의 점수에 더해지므로 각 헤드의 softmax는 고른 Key만 읽습니다. 여기서부터는 "
    "멀티헤드 잠재 어텐션 그대로입니다.",
    "note.index_q": "인덱스 헤드 {heads}개, 각각 D = {dim}개의 수이며 {source}에서 나옵니다.",
    "note.index_k": "토큰마다 D = {dim}개의 수: 인덱스 헤드 {heads}개 모두를 위한 Key 하나.",
    "note.index_weights": "토큰마다 가중치 {heads}개, 인덱스 헤드마다 하나 (점수에서 √H_I로 "
    "나눕니다).",
    "note.index_rope_half": "각 인덱스 헤드의 수 D = {dim}개 중 앞의 d_R = {rope}개가 회전하며, "
    "차원 i의 짝은 i + {half}입니다 (rotate_half, DeepSeek-V3.2의 인덱서). 어텐션 쪽은 "
    "이웃한 짝을 회전합니다.",
    "note.index_rope_pairs": "각 인덱스 헤드의 수 D = {dim}개 중 앞의 d_R = {rope}개가 이웃한 "
    "짝(2i와 2i + 1)으로 회전합니다 (GLM-MoE-DSA의 인터리브 방식).",
    "note.index_scores": "인덱스 헤드 {heads}개에 걸쳐 더합니다. q는 {q}, k는 {k}, D = {dim}. "
    "transformers가 CPU에서 계산하는 대로: Hadamard 회전 없음 (q·k는 그대로), FP8 없음.",
    "note.index_tie": "행 {count}개({rows})에서 같은 인덱스 점수가 경계에 걸쳐 있습니다. 그중 앞의 "
    "Key를 남깁니다 (torch.topk는 그중 일부를 자기 순서대로 남깁니다).",
    "note.index_masked": "인과 마스크가 가리는 Key에는 −∞: 결코 선택되지 않습니다.",
    "note.index_topk": "Key m = {m}개 중 top_k = {top_k}개. 볼 수 있는 Key가 그보다 적은 Query는 "
    "볼 수 있는 Key를 모두 남깁니다. 점수가 같으면 앞의 Key를 먼저 남깁니다.",
    "note.index_mask": "모든 헤드의 마스크 단계가 이 마스크를 인과 마스크에 더합니다.",
    "note.indexer_grad": "이 마스크에는 인덱서가 고른 M_I (각 Query가 남긴 Key: top_k = "
    "{top_k}개, 볼 수 있는 Key가 그보다 적으면 전부)가 고정된 수로 들어 있습니다. top-k는 "
    "고르기라서 기울기가 없으므로, 역전파는 잠재 어텐션만 거쳐 돌아갑니다. 인덱서의 가중치 "
    "(W_IQ, W_IK, Key의 LayerNorm, W_w)는 이 손실에서 기울기를 받지 않고, 인덱서가 읽는 입력 "
    "({reads}) 역시 인덱서를 거쳐서는 기울기의 몫을 받지 않습니다. transformers는 "
    "DeepSeek-V3.2의 인덱서를 torch.no_grad() 아래에서 실행합니다. DeepSeek-V3.2는 인덱서를 그 "
    "자신의 손실로 학습합니다 (transformers의 모델 문서: 헤드에 걸쳐 더하고 정규화한 어텐션 "
    "가중치와 인덱스 점수의 소프트맥스 사이의 KL 발산).",
    "note.indexer_folded": "인덱서의 마스크 M_I (index_mask)가 함께 들어갑니다: 각 Query는 자신의 "
    "top_k = {top_k}개 Key만 남깁니다.",
    "hint.index_rope": "{cell}: {src}의 {i}번째 행의 {j}번 차원을 같은 인덱스 헤드 안의 짝 차원과 "
    "함께 φ = 위치 × 주파수만큼 회전합니다 (헤드 안에서 d_R 뒤의 차원은 그대로 지나갑니다).",
    "hint.index_scores": "{cell} = 인덱스 헤드 h에 걸친 합 (w[{i},h]/√H_I) × "
    "ReLU({i}번째 행의 q_h · {j}번째 행의 k / √D).",
    "hint.index_topk": "{cell}: {src}[{i},{j}] 값이 {i}번째 행에서 가장 큰 {top_k}개 안에 들면 "
    "(그리고 −∞가 아니면) 1, 아니면 0.",
    "hint.index_mask": "{cell}: keep[{i},{j}] = 1이면 0, 0이면 −∞.",
    "mistake.index_weights_missing": "이 값은 인덱스 헤드들의 ReLU 점수를 같은 가중치로 "
    "더했습니다. 각 헤드의 점수에 먼저 자신의 가중치 w[i,h]/√H_I를 곱해야 합니다.",
    "mistake.index_relu_missing": "이 값은 ReLU를 빠뜨렸습니다. Key가 관련 없다고 보는 헤드"
    "(q·k < 0)는 음수 점수가 아니라 0을 더해야 합니다.",
    "mistake.index_topk_ignored": "이 값은 Query가 볼 수 있는 Key를 모두 남깁니다. 인덱서는 "
    "인덱스 점수가 가장 큰 top_k = {top_k}개만 남깁니다.",
    "mistake.index_topk_per_head": "이 값은 인덱스 헤드마다 top-k를 따로 골라 어느 헤드든 고른 "
    "Key를 남깁니다. 인덱서는 가중치를 곱한 헤드들을 먼저 더하고, 그 합에서 top-k를 한 번 "
    "고릅니다.",
    "indexer.needs_mla": "indexer는 멀티헤드 잠재 어텐션의 Key를 고릅니다: mla와 함께 주세요 "
    "(Query 잠재 벡터를 읽습니다)",
    "indexer.not_object": 'indexer는 {{"wq": …, "wk": …, "weights": …, "heads": …, '
    '"top_k": …}} 같은 객체여야 합니다. 받은 값: {value}',
    "indexer.unknown_key": "indexer에 {key} 키는 없습니다. 키 목록: {known}",
    "indexer.missing": "indexer에 필요한 키: {missing} (docs/input-format.md 참고)",
    "indexer.rope_style": 'indexer.rope_style은 "half" 또는 "pairs"여야 합니다. 받은 값: {value}',
    "indexer.q_rows": "{field}의 모양은 {shape}인데, 인덱서의 Query는 {what}에서 만듭니다. "
    "{layout} 레이아웃에서 {want} 모양이어야 합니다",
    "indexer.q_width": "indexer.wq의 열은 {cols}개입니다. H_I = heads = {heads}일 때 H_I·D개, "
    "즉 {heads}의 배수여야 하고 인덱스 헤드마다 적어도 d_R = {rope}개여야 합니다 (RoPE가 "
    "회전합니다)",
    "indexer.shape": "{field}의 모양은 {shape}인데, {layout} 레이아웃에서 {want} 모양이어야 합니다 "
    "(D = {dim}인 인덱스 헤드 H_I = {heads}개)",
    "indexer.norm_length": "{field}의 수는 {length}개인데, 인덱서의 Key는 D = {dim}개입니다",
    "indexer.decode": "희소 어텐션 인덱서는 KV 캐시로 한 단계씩 계산하지 않습니다: --decode를 "
    "빼세요 (전체 실행에서 보입니다).",
    "extract.dsa_shared": "{model}: 층 {layer}에는 자기 인덱서가 없습니다. 층 {full}의 top-k Key를 "
    '다시 쓰며 (indexer_types의 "shared" 층), 그 Key는 그 층의 입력에서 골랐습니다. 다른 층을 '
    "추출하세요: 층 {full} 또는 자기 인덱서를 실행하는 층",
    "extract.dsa_tie": "{model}: 층 {layer}의 인덱서가 행 {rows}에서 top-k 경계에 같은 점수를 "
    "주며, torch.topk는 그중에서 qkvcalc(앞의 Key)와 다르게 골랐습니다. 그러면 문제가 층과 다른 "
    "Key를 보게 됩니다. 다른 토큰을 (또는 top_k + 1개보다 적은 토큰을) 추출하세요",
    "extract.mla_bias": "{model}: 층 {layer}의 잠재 투영에 바이어스가 있으며 (attention_bias), "
    "mla는 바이어스를 받지 않습니다",
    # ---- qkvcalc extract (issue 16) ----------------------------------------------------
    "extract.needs_models": "qkvcalc {command} 명령은 PyTorch와 transformers로 모델을 실행하는데, "
    "여기에는 {missing} 패키지가 설치되어 있지 않습니다: pip install 'qkvcalc[models]'",
    "extract.architecture": "{model}의 모델 종류는 {model_type!r}이며, qkvcalc extract가 "
    "모르는 종류입니다. 아는 종류: {known}",
    "extract.layer": "층 {layer}: {model}에는 층이 {count}개 있고, 번호는 0부터 {last}까지입니다",
    "extract.not_attention": "{model}의 층 {layer}: 어텐션이 아닌 {kind} 층이며, qkvcalc "
    "extract는 이 층을 읽지 않습니다. 이 모델의 어텐션 층: {attention}",
    "extract.minimax_act": "MiniMax의 라이트닝 층은 설정의 hidden_act를 q, k, v에 적용하는데, "
    "qkvcalc의 lightning 키에는 silu만 있습니다. 이 모델의 값: {act}",
    "extract.hybrid": "{model}: {arch} 모델({model_type!r})은 소프트맥스 어텐션 층과 {kind} 층을 "
    "섞은 하이브리드이며, qkvcalc extract는 아직 이 모델의 어텐션 층을 읽지 못합니다",
    "extract.dsv4_layer": "{model}의 층 {layer}: DeepSeek-V4의 {kind} 층이며, qkvcalc extract가 "
    "읽지 못하는 층입니다. {why}. DeepSeek-V4 모델에서는 슬라이딩 윈도우 층, 고압축 층, 압축 희소 "
    "층이 추출됩니다. 이 모델의 층: {layers}",
    "extract.dsv4": "{model}: qkvcalc가 모르는 종류의 층이 있는 DeepSeek-V4 모델이며, "
    "qkvcalc는 이 모델을 통째로 읽지 않습니다. 아는 종류의 층은 하나씩 추출됩니다(qkvcalc "
    "extract --layer L). 이 모델의 층: {layers}",
    "dsv4.sliding": "슬라이딩 윈도우 어텐션(W = {window})",
    "dsv4.csa": "압축 희소 어텐션(m = {m}, 상위 {top_k}개)",
    "dsv4.hca": "고압축 어텐션(m = {m})",
    "dsv4.other": "{name!r}(qkvcalc가 모르는 종류)",
    "dsv4.layers": "{layers}: {kind}",
    "dsv4.join": "{first}; {rest}",
    "dsv4.why_other": "qkvcalc는 이 종류의 층이 무엇을 계산하는지 모릅니다",
    "extract.not_expressible": "{model}: {arch} 모델({model_type!r})은 qkvcalc extract가 "
    "읽지 않습니다. 이유: {reason}",
    "extract.bitnet_quantized": "{model}: 양자화된 BitNet 체크포인트입니다(설정의 "
    "quantization_config, quant_method {method}). qkvcalc extract는 이를 읽지 않습니다: 이때 "
    "transformers는 각 투영을 BitLinear나 AutoBitLinear로 만드는데, 이들은 실행할 때 입력을 "
    "토큰마다 8비트로 반올림하며, 입력 형식에는 이 단계를 나타내는 키(필드)가 없습니다. "
    "quantization_config가 없는 BitNet 모델(투영이 보통의 nn.Linear)은 읽으며, 그 attn_sub_norm은 "
    "sub_norm이 됩니다.",
    "refused.jetmoe": "이 모델의 어텐션은 어텐션 헤드의 전문가 혼합입니다. 토큰마다 라우터가 고른 "
    "전문가에서 그 토큰의 Query와 출력 투영의 몫이 오므로 W_Q와 W_O가 토큰마다 다르고, 문제에는 "
    "W_Q와 W_O가 하나씩만 있습니다",
    "refused.inkling": "이 모델의 K와 V는 x·W_K와 x·W_V가 아닙니다. k_proj와 v_proj 다음에 짧은 "
    "인과 합성곱(k_sconv, v_sconv)이 각 토큰의 행을 앞선 토큰들의 행과 섞는데, 문제는 각 토큰의 "
    "행만 투영합니다",
    "refused.inkling2": "이 모델의 K와 V는 x·W_K와 x·W_V가 아닙니다. k_proj와 v_proj 다음에 짧은 "
    "인과 합성곱(k_sconv, v_sconv)이 각 토큰의 행을 앞선 토큰들의 행과 섞습니다. 또 싱크가 각 "
    "토큰의 투영(sink_proj)인데, 문제에는 헤드마다 싱크가 하나씩 있습니다",
    "extract.doge_window": "{model}, {layer}번 층: 점수의 한 행이 보는 Key가 {keys}개입니다. "
    "Key가 keep_window_size = {keep}개를 넘으면 Doge의 동적 마스크는 헤드와 행마다 편향이 가장 큰 "
    "Key {keep}개만 남기는데, 문제의 어떤 마스크도 이를 나타낼 수 없습니다. 토큰을 {keep}개 "
    "이하로 주세요",
    "extract.block_sparse": "{model}의 층 {layer}: 블록 희소 어텐션 층입니다. 인덱서가 각 Query와 "
    "K와 V를 함께 쓰는 헤드 묶음마다 그 Query가 볼 수 있는 Key 블록을 고르므로 헤드마다 마스크가 "
    "다른데, 문제에는 모든 헤드에 마스크가 하나뿐입니다. 이 모델에서 extract가 읽는 층: {layers}",
    "hybrid.gated_deltanet": "선형 어텐션(Gated DeltaNet)",
    "hybrid.mamba": "상태 공간(Mamba)",
    "hybrid.short_conv": "짧은 합성곱",
    "hybrid.kimi_delta": "선형 어텐션(Kimi Delta Attention)",
    "hybrid.lightning": "선형 어텐션(라이트닝 어텐션)",
    "hybrid.rg_lru": "순환(RG-LRU)",
    "hybrid.none": "없음",
    "hybrid.mlp": "피드포워드(MLP만 있는)",
    "hybrid.other": "다른 종류의",
    "extract.token_id": "토큰 id {id}: 어휘 밖의 값입니다. {model}의 토큰은 {size}개이고, "
    "id는 0부터 {last}까지입니다",
    "extract.ids_syntax": "--ids {text!r}: 토큰 id는 공백이나 쉼표로 나눈 정수로 적어 주세요. "
    '예: "15496 995"',
    "extract.ids_empty": "실행할 토큰이 없습니다: 토큰 id를 하나 이상 주세요",
    "extract.input_choice": "토큰은 --ids와 --text 가운데 정확히 하나로 주세요",
    "extract.no_tokenizer": "--text에는 모델의 토크나이저가 필요한데, {model}에는 토크나이저가 "
    "없습니다: --ids로 토큰 id를 주세요",
    "extract.not_checkpoint": "{path}: Hugging Face 체크포인트 폴더가 아닙니다. config.json이 "
    "없습니다 (체크포인트에는 config.json과 model.safetensors 같은 가중치 파일이 있습니다)",
    "extract.not_a_file": "{model}에 있는 {file!r}: 파일이 아닙니다 (이름 있는 파이프, "
    "소켓 또는 장치). 체크포인트 폴더에는 파일이 있어야 하며, 이것을 읽으면 끝없이 기다릴 수 "
    "있습니다",
    "extract.sizes_lie": "{path}의 config.json이 가중치와 맞지 않습니다: 체크포인트에서 "
    "{weight} 모양은 {stored}인데, 설정으로 만들면 {made}입니다. config.json의 크기(헤드 수, "
    "헤드 크기, 은닉 크기)는 가중치를 학습한 때의 값이어야 합니다.",
    "extract.no_weights": "{path}에 config.json은 있지만 가중치를 읽을 수 없습니다: {reason}",
    "extract.custom_code": "{model}에는 체크포인트 자체의 코드가 들어 있고 ({file}의 "
    "auto_map이 그 코드를 가리킵니다), qkvcalc는 체크포인트의 코드를 절대 실행하지 않습니다: "
    "transformers에 내장된 구조의 체크포인트를 쓰세요",
    "extract.custom_code_needed": "{model}: 자체 코드가 있어야 불러올 수 있는 모델인데, qkvcalc는 "
    "체크포인트의 코드를 절대 실행하지 않습니다: transformers에 내장된 구조의 체크포인트를 쓰세요",
    "extract.pickled_weights": "{path}: 가중치 파일이 텐서 말고 다른 것도 담은 pickle이라 "
    "읽지 않았습니다 (풀면 코드가 실행될 수 있습니다). 가중치를 model.safetensors로 "
    "저장해 주세요",
    "extract.no_model_type": "{path}: config.json에 모델의 구조가 적혀 있지 않습니다 "
    "(model_type이 없습니다)",
    "extract.bad_config": "{model}: transformers가 이 config.json으로 모델을 만들 수 없습니다: "
    "{reason}",
    "extract.config_field": "{model}: config.json의 {field} 값이 {value}입니다. 1 이상의 "
    "정수여야 합니다",
    "extract.config_too_big": "{path}의 크기가 {size}바이트입니다. 체크포인트의 설정 파일은 몇 "
    "킬로바이트이고, {limit}바이트가 넘는 파일은 읽지 않습니다",
    "extract.config_nested": "{path}: 너무 깊이 중첩되어 읽을 수 없습니다. 체크포인트의 설정은 "
    "몇 단계 깊이면 충분합니다",
    "extract.too_many_layers": "{model}: config.json에 층이 {count}개로 적혀 있습니다. {limit}개가 "
    "넘는 모델은 없으므로 만들지 않습니다",
    "extract.too_big": "{model}: 가중치가 차지할 메모리는 약 {need}이고, 이 컴퓨터에서 qkvcalc가 "
    "쓸 수 있는 메모리 {have}보다 큽니다",
    "extract.too_big_float64": "{model}: 토큰 {tokens}개를 float64로 실행하려면 메모리가 약 "
    "{need} 필요합니다(임베딩과 한 번에 한 층씩 float64로, 그 층의 가중치를 문제로). 지금 이 "
    "컴퓨터에서 쓸 수 있는 {have}보다 많습니다. 메모리를 비우거나, 토큰을 줄이거나, --dtype을 "
    "auto로 두세요",
    "extract.out_of_memory": "{model}: 모델을 불러오거나 실행하는 도중 메모리가 부족해졌습니다",
    "extract.too_many_tokens": "토큰 {count}개: qkvcalc extract는 최대 {limit}개까지 실행합니다. "
    "토큰 id를 줄이거나 --text를 짧게 주세요",
    "extract.too_many_positions": "토큰 {count}개: {model} 모델은 위치를 {positions}개까지만 "
    "배웠습니다. {positions}개 이하로 주세요",
    "extract.too_many_table_positions": "토큰 {count}개: {model} 모델의 사인파 위치 표에는 "
    "위치마다 한 행씩 {positions}개 행이 있습니다. 토큰을 {positions}개 이하로 주세요",
    "extract.not_finite": "{model}, {layer}번 층: {field}에 NaN이나 무한대가 있어서 (위치 "
    "{where}) 문제 파일에 담을 수 없습니다",
    "extract.not_finite_value": "{model}, {layer}번 층: {field}의 값이 {value}이고, 이 값은 문제 "
    "파일에 담을 수 없습니다",
    "extract.id_too_long": "--ids: {digits}자리 토큰 id입니다. 어휘는 그보다 훨씬 작습니다",
    "extract.config_not_finite": "{model}: config.json의 {field} 값이 {value}입니다. 모델의 "
    "수는 모두 유한해야 합니다",
    "extract.hub_unreachable": "{model}: 여기 있는 폴더가 아니고, Hugging Face 허브({hub})에 "
    "연결할 수 없으며, 로컬 캐시에도 없습니다",
    "extract.no_folder": "{path}: 그런 폴더가 없습니다",
    "extract.cannot_load": "{model} 모델을 불러올 수 없습니다: {reason}",
    "extract.dtype": "dtype {dtype!r}: auto, float64, float32, bfloat16 가운데 하나를 고르세요",
    "extract.dtype_loaded": "dtype {dtype}: 이미 불러온 모델은 자기 dtype({own})으로 "
    '실행됩니다. dtype="auto"를 주거나, 먼저 모델을 변환하세요 (model.to(torch.float64))',
    "extract.not_a_model": "extract에는 transformers 모델이나 체크포인트 폴더의 경로를 주세요. "
    "주어진 값의 종류: {kind}",
    "extract.name": "{model}, {layer}번 층",
    "extract.description": "{model} ({arch})의 {layer}번 층 셀프 어텐션, 토큰 {n}개: x는 "
    "{dtype} 정밀도로 실행했을 때 그 어텐션에 들어가는 입력 그대로이고, 가중치는 그 층의 것을 "
    "float64로 옮긴 값입니다.",
    "extract.description_kv_shared": "{model} ({arch})의 {layer}번 층 셀프 어텐션, 토큰 {n}개: "
    "x는 {dtype} 정밀도로 실행했을 때 그 어텐션에 들어가는 입력 그대로이고, W_Q, Query 정규화, "
    "W_O는 그 층의 것을 float64로 옮긴 값입니다.",
    "extract.description_linear": "{model} ({arch})의 {layer}번 층 선형 어텐션(Gated DeltaNet), "
    "토큰 {n}개: x는 {dtype} 정밀도로 실행했을 때 그 층에 들어가는 입력 그대로이고, 가중치는 그 "
    "층의 것을 float64로 옮긴 값입니다.",
    "extract.kda_activation": "{model}의 {layer}번 층은 Kimi Delta Attention 층인데, 합성곱의 "
    "활성화 함수가 {act}, 출력 게이트의 활성화 함수가 {gate}입니다. kimi_delta 키는 SiLU와 "
    '시그모이드만 계산합니다(Kimi Linear 자체의 설정: hidden_act "silu").',
    "extract.kda_lower_bound": "{model}의 {layer}번 층은 Kimi Delta Attention 층인데, 하한이 있는 "
    "감쇠 g = b·σ(e^(A_log)·(F + dt_bias))의 하한이 b = {bound}(kda_lower_bound)입니다. "
    "kimi_delta 키는 0보다 작은 하한만 읽습니다(그러면 채널마다의 감쇠 e^g는 (e^b, 1) 안에 "
    "있습니다).",
    "extract.gdn_activation": "{model}의 {layer}번 층은 Gated DeltaNet 층인데, 합성곱의 활성화 "
    "함수가 {act}, 게이트가 있는 정규화의 활성화 함수가 {gate}입니다. gated_delta 키는 SiLU만 "
    '계산합니다(이 하이브리드 모델들 자체의 설정: hidden_act "silu").',
    "extract.description_kda": "{model} ({arch})의 {layer}번 층 선형 어텐션(Kimi Delta "
    "Attention), 토큰 {n}개: x는 {dtype} 정밀도로 실행했을 때 그 층에 들어가는 입력 그대로이고, "
    "가중치는 그 층의 것을 float64로 옮긴 값입니다.",
    "extract.x_layernorm": "여기서 x = {norm}(h)이고, h는 {layer}번 층의 입력(잔차 스트림)입니다. "
    "{arch} 모델은 프리-노름 구조로, 어텐션 앞에 LayerNorm이 있습니다. h의 각 행에서 평균을 뺀 "
    "뒤 √(분산 + ε)로 나누고(ε = {eps}), 정규화 모듈 {norm}의 가중치를 곱한 다음 그 편향을 "
    "더합니다. 가중치와 편향을 적용하기 전의 각 행은 평균이 0이고 분산은 1보다 조금 작습니다.",
    "extract.x_layernorm_no_bias": "여기서 x = {norm}(h)이고, h는 {layer}번 층의 입력(잔차 "
    "스트림)입니다. {arch} 모델은 프리-노름 구조로, 어텐션 앞에 편향 없는 LayerNorm이 있습니다. "
    "h의 각 행에서 평균을 뺀 뒤 √(분산 + ε)로 나누고(ε = {eps}), 정규화 모듈 {norm}의 가중치를 "
    "곱합니다. 가중치를 곱하기 전의 각 행은 평균이 0이고 분산은 1보다 조금 작습니다.",
    "extract.x_rmsnorm": "여기서 x = {norm}(h)이고, h는 {layer}번 층의 입력(잔차 스트림)입니다. "
    "{arch} 모델은 프리-노름 구조로, 어텐션 앞에 RMSNorm이 있습니다. h의 각 행을 √(제곱의 평균 "
    "+ ε)로 나누고(ε = {eps}), 정규화 모듈 {norm}의 배율을 곱합니다. 평균은 빼지 않으므로, "
    "배율을 곱하기 전의 각 행은 제곱의 평균이 1보다 조금 작고 평균이 0일 필요는 없습니다.",
    "extract.x_post": "여기서 x는 {layer}번 층의 입력 그대로, 곧 {previous}번 층의 출력입니다. "
    "{arch} 모델은 포스트-노름 구조로, 정규화가 어텐션과 잔차 연결 뒤에 오며 층의 입력과 어텐션 "
    "사이에는 아무것도 없습니다.",
    "extract.x_post_first": "여기서 x는 0번 층의 입력 그대로, 곧 모델이 첫 층에 주는 임베딩입니다. "
    "{arch} 모델은 포스트-노름 구조로, 정규화가 어텐션과 잔차 연결 뒤에 오며 층의 입력과 어텐션 "
    "사이에는 아무것도 없습니다.",
    "extract.x_block_input": "여기서 x는 {layer}번 층의 입력 그대로입니다. 층의 입력과 어텐션 "
    "사이에는 아무것도 없습니다.",
    "extract.kv_shared": "이 층은 자기 Key와 Value가 없어 앞선 {earlier}번 층의 것을 다시 "
    "씁니다(KV 공유). 그래서 source는 그 층의 어텐션 입력이고, W_K, W_V와 Key 정규화도 그 층의 "
    "것입니다.",
    "extract.description_block": "{model} ({arch})의 {layer}번 층 셀프 어텐션, 토큰 {n}개: x는 "
    "{dtype} 정밀도로 실행했을 때 그 어텐션에 들어가는 입력 그대로이고, 가중치는 이 층이 그 "
    "어텐션을 부를 때 쓰는 것을 float64로 옮긴 값입니다.",
    "extract.shared_block": "이 어텐션 블록과 그 가중치를 함께 쓰는 층: {layers}.",
    "extract.adapters_folded": "W_Q, W_K, W_V는 블록의 가중치에 이 층의 어댑터를 더해 합친 "
    "것입니다(W + B·A).",
    "extract.value_scale_folded": "이 가운데 W_V와 b_V는 v_proj의 값에 이 모델이 V에 곱하는 "
    "값(attention_value_scale, {scale})을 곱해 합친 것입니다.",
    "extract.loading": "{model} 불러오는 중 …",
    "extract.running": "{model} 모델을 {layer}번 층까지 실행하는 중 …",
    "extract.mismatch": "{model}, {layer}번 층: extract가 만든 문제가 transformers {version}"
    "(모델 종류 {model_type})에서 이 층을 재현하지 못합니다. 출력이 층 자신의 출력과 최대 "
    "≈{difference}만큼 다릅니다 (출력의 가장 큰 값의 ≈{relative}; {dtype} 실행의 허용치는 "
    "{tolerance}). extract는 다른 층을 계산하는 문제를 쓰지 않습니다. qkvcalc가 시험한 "
    "transformers 버전({tested})을 쓰거나, 이 모델 종류를 알려 주세요",
    "extract.layout": "{model}: transformers {version}의 {model_type} 모듈에 extract가 읽는 "
    "'{attribute}' 속성이 없습니다. extract는 모르는 구조를 짐작하지 않습니다. qkvcalc가 시험한 "
    "transformers 버전({tested})을 쓰세요",
    "extract.model_failed": "{model_type}: transformers의 순전파가 {layer}번 층을 읽기 전에 "
    "멈췄습니다({error}). extract는 transformers가 정의한 그대로 모델을 실행하며 그 길에서 층을 "
    "읽으므로, 이 층은 읽을 수 없습니다",
    "extract.no_output": "{model}, {layer}번 층: transformers {version}에서 {model_type} "
    "어텐션이 extract가 읽는 출력 투영을 한 번도 부르지 않아 출력을 확인할 수 없습니다. "
    "extract는 짐작하지 않습니다. qkvcalc가 시험한 transformers 버전({tested})을 쓰세요",
    "help.extract": "Hugging Face 모델의 한 층에서 어텐션을 꺼내 qkvcalc explain의 문제로 "
    "만듭니다: 그 층의 정확한 입력, 가중치, 옵션 (qkvcalc[models]가 필요합니다).",
    "help.extract.model": "체크포인트 폴더 (config.json과 가중치), 또는 이 컴퓨터가 내려받을 수 "
    "있을 때는 허브의 모델 이름.",
    "help.extract.layer": "층 번호. transformers처럼 0부터 셉니다.",
    "help.extract.ids": '공백으로 나눈 토큰 id: "15496 995".',
    "help.extract.text": "모델의 토크나이저가 토큰 id로 바꿀 텍스트.",
    "help.extract.dtype": "실행할 dtype: auto (체크포인트의 dtype), 또는 x를 float64로 "
    "정확히 얻으려면 float64.",
    "help.extract.output": "문제를 표준 출력 대신 이 파일에 씁니다(이름이 .npz로 끝나면 "
    "numpy 배열로).",
    # ---- qkvcalc heads: 모든 층의 모든 헤드를 한눈에 -----------------------------------------
    "heads.running": "{model} 모델을 한 번 실행해 모든 층을 보는 중 …",
    "heads.head": "헤드 {head}: 이 층에는 헤드가 {count}개 있고, 1부터 {count}까지 번호가 붙습니다",
    "heads.cannot_split": "이 층의 문제에 있는 키 {key!r}: qkvcalc heads는 이 키를 헤드 "
    "하나로 나눌 수 없습니다. 층 전체는 qkvcalc extract로 쓰세요",
    "heads.head_name": "{name}, 헤드 {head}",
    "heads.head_description": "{name}의 헤드 {heads}개 중 헤드 {head} 하나만 떼어 낸 문제: "
    "그 헤드의 Query 열과, 그 헤드가 읽는 K/V 헤드 {kv_head}의 Key 열과 Value 열이 들어가고, "
    "출력 투영은 없습니다 (헤드의 출력은 W_O 앞에서 이어 붙이는 결과 중 그 헤드의 몫입니다).",
    "heads.too_many_weights": "토큰 {n}개: {model}의 모든 헤드를 합치면 가중치가 "
    "{count}개({layers}개 층 × {heads}개 헤드 × {n}²)로, qkvcalc heads가 보여 주는 한도 "
    "{limit}개보다 많습니다. 토큰을 줄이거나 qkvcalc extract로 한 층만 꺼내세요",
    "heads.too_many_weights_implicit": "토큰 {n}개: {model}의 모든 헤드를 합치면 가중치가 "
    "{count}개(({layers}개 층 × {heads}개 헤드 + 선형 어텐션 {linear}개 층 × {linear_heads}개 "
    "헤드) × {n}²)로, qkvcalc heads가 보여 주는 한도 {limit}개보다 많습니다. 토큰을 줄이거나 "
    "qkvcalc extract로 한 층만 꺼내세요",
    "heads.too_many_weights_per_layer": "토큰 {n}개: {model}의 모든 헤드를 합치면 가중치가 "
    "{count}개(층마다 수가 다른 헤드 모두 {heads}개 × {n}²)로, qkvcalc heads가 보여 주는 한도 "
    "{limit}개보다 많습니다. 토큰을 줄이거나 qkvcalc extract로 한 층만 꺼내세요",
    "heads.layer_and_head": "--layer와 --head는 함께 씁니다: 헤드 하나의 문제를 쓰려면 둘 "
    "다 주고, 모든 헤드를 한눈에 보려면 둘 다 빼세요",
    "heads.format_with_head": "--format {format}: --layer와 --head를 주면 그 헤드의 문제를 "
    "qkvcalc extract처럼 JSON으로 씁니다. --format은 빼세요",
    "heads.title": "모든 헤드의 어텐션 가중치: {model} ({arch}, {dtype}), 토큰 {n}개, "
    "{layers}개 층 × {heads}개 헤드",
    "heads.how_to_read": "헤드마다 블록 하나, 층마다 블록 한 줄 (0부터). 블록 안에서 행은 "
    "Query, 열은 Key이고 토큰 순서대로이며, 칸이 짙을수록 가중치가 큽니다 ({ramp}, 0에서 1까지).",
    "heads.how_to_read_mixed": "헤드마다 블록 하나, 층마다 블록 한 줄 (0부터). 블록 안에서 "
    "행은 Query, 열은 Key이고 토큰 순서대로이며, 칸이 짙을수록 그 수가 큽니다 ({ramp}). "
    "소프트맥스 층의 블록에서는 가중치이며 0부터 1까지, 암묵적 층의 블록에서는 |W|이며 0부터 "
    "그 층에서 가장 큰 |W|까지입니다(그 값은 층 위에 있습니다).",
    "heads.how_to_read_implicit": "헤드마다 블록 하나, 층마다 블록 한 줄 (0부터). 블록 안에서 "
    "행은 Query, 열은 Key이고 토큰 순서대로이며, 칸이 짙을수록 |W|가 큽니다 ({ramp}). 0부터 "
    "그 층에서 가장 큰 |W|까지입니다(그 값은 층 위에 있습니다).",
    "heads.others": "이 모델의 {kind} 층은 소프트맥스 어텐션이 아니어서 어텐션 가중치 행렬을 "
    "만들지 않으므로 이 페이지에서 뺍니다(층: {layers}).",
    "heads.attention_rows": "아래 줄은 이 모델의 어텐션 층입니다: {layers}.",
    "heads.before_sinks": "이 모델({arch})은 각 헤드의 학습된 싱크를 소프트맥스 뒤에, 헤드의 "
    "출력에 곱하는 σ(행의 스코어의 logsumexp − s)로 적용합니다. 그래서 이 맵은 그 곱 이전의 "
    "transformers의 확률이며 각 행의 합은 1입니다. 층의 문제(qkvcalc extract, 싱크는 "
    "`sinks`)의 가중치에는 싱크의 몫이 들어 있어 각 행의 합이 1보다 작습니다.",
    "heads.tokens": "토큰",
    "heads.layer": "층 {layer}",
    "heads.head_label": "h{head}",
    "heads.open_one": "어느 헤드든 하나의 문제로: {command} | qkvcalc explain",
    "heads.too_wide": "토큰 {n}개로는 블록이 이 터미널보다 넓어 가장자리에서 잘립니다. "
    "--format html은 잘리지 않게 보여 줍니다",
    "heads.page_title": "모든 헤드를 한눈에",
    "heads.html_hint": "헤드를 누르면 그 가중치와 그 문제의 풀이가 열립니다.",
    "heads.head_title": "층 {layer}, 헤드 {head}",
    "heads.back": "모든 헤드로 돌아가기",
    "heads.command": "이 헤드를 하나의 문제로 쓰고 풀이하는 명령:",
    "heads.no_explanation": "모든 헤드의 풀이는 헤드가 모두 {limit}개 이하인 페이지에만 "
    "들어가는데, 이 모델에는 {count}개가 있습니다. 위 명령으로 이 헤드의 문제를 쓰고 풀이하세요.",
    "heads.not_explained": "이 헤드의 풀이는 페이지에 들어 있지 않습니다: {reason}.",
    "heads.weights_caption": "어텐션 가중치 (행: Query, 열: Key)",
    "heads.implicit_shown": "이 모델의 {kind} 층은 어텐션 가중치 행렬을 만들지 않지만, 각 "
    "헤드는 그런 행렬을 만들지 않고 계산합니다: 헤드가 읽는 값과의 곱 W·V가 층의 정규화 전 "
    "헤드의 출력인 행렬 W입니다. 아래에서 이 층들의 줄은 W를 그리고 암묵적이라고 표시합니다"
    "(층: {layers}).",
    "heads.rows_and_implicit": "아래 줄은 이 모델의 소프트맥스 어텐션 층(층: {layers})과 "
    "{kind} 층(층: {linear}, 암묵적)입니다.",
    "heads.title_implicit": "모든 헤드의 어텐션 가중치: {model} ({arch}, {dtype}), 토큰 {n}개, "
    "{layers}개 층 × {heads}개 헤드, 그리고 선형 어텐션 {linear}개 층 × {linear_heads}개 헤드의 "
    "암묵적 행렬",
    "heads.implicit_legend": "층 {layer}, {kind}, 암묵적: 각 블록은 그 헤드가 만들지 않고 "
    "계산하는 행렬 W이며 소프트맥스 확률이 아닙니다. 부호가 있고 행의 합이 1일 필요가 "
    "없습니다. 칸의 농도는 같은 단계({ramp})로 나타낸 |W|이며, 0부터 이 층에서 가장 큰 "
    "|W|까지입니다(그 값: {largest}). 농도 뒤의 {mark} 표시는 음수인 칸입니다.",
    "heads.implicit_legend_html": "층 {layer}, {kind}, 암묵적: 각 블록은 그 헤드가 만들지 "
    "않고 계산하는 행렬 W이며 소프트맥스 확률이 아닙니다. 부호가 있고 행의 합이 1일 필요가 "
    "없습니다. 파란 칸은 양수, 빨간 칸은 음수이며, 짙을수록 |W|가 크고, 0부터 이 층에서 가장 "
    "큰 |W|까지입니다(그 값: {largest}).",
    "heads.implicit": "암묵적",
    "heads.implicit_caption": "이 헤드가 만들지 않고 계산하는 행렬 W (행: Query, 열: Key; W·V가 "
    "층의 정규화 전 헤드의 출력), 소프트맥스 확률이 아님: 부호가 있고 행의 합이 1일 필요가 없음",
    "heads.head_description_lightning": "{name}의 헤드 {heads}개 중 헤드 {head} 하나만 떼어 낸 "
    "문제: 그 헤드의 Query 열, Key 열, Value 열과 그 헤드의 감쇠율이 들어가고, 모든 헤드의 "
    "출력을 나란히 놓고 하는 RMSNorm, 그 뒤의 출력 게이트, 출력 투영은 없습니다. 출력은 그 "
    "정규화 전 헤드 자신의 출력(W·V)입니다.",
    "help.heads": "Hugging Face 모델을 한 번 실행해 모든 층의 모든 헤드의 어텐션 가중치를 작은 "
    "히트맵의 격자로 보여 줍니다 (qkvcalc[models] 필요).",
    "help.heads.model": "체크포인트 폴더 (config.json과 가중치), 또는 이 컴퓨터가 내려받을 수 "
    "있을 때는 허브의 모델 이름.",
    "help.heads.ids": '공백으로 나눈 토큰 id: "101 7592 102".',
    "help.heads.text": "모델의 토크나이저가 토큰 id로 바꿀 텍스트.",
    "help.heads.format": "table (터미널), html (페이지: 헤드를 누르면 풀이가 열림) 또는 json "
    "(qkvcalc.heads/1).",
    "help.heads.layer": "--head와 함께: 대신 그 헤드의 문제를 씁니다 (층은 0부터).",
    "help.heads.head": "--layer와 함께: 문제를 쓸 헤드 (헤드는 1부터).",
    "help.heads.dtype": "실행할 dtype: auto (체크포인트의 dtype), float64, float32 또는 bfloat16.",
    "help.heads.output": "표준 출력 대신 이 파일에 씁니다 (html, json 또는 헤드의 문제).",
    # ---- qkvcalc check (issue 38): a person's own attention code, graded ----
    "help.check": "직접 작성한 어텐션 함수(FILE.py:FUNCTION)를 작은 문제부터 큰 문제까지 "
    "채점합니다: 처음 달라지는 단계와 칸, 그것을 설명하는 이름 붙은 실수, "
    "그 실수를 보여 주는 가장 작은 문제의 풀이. --stages를 주면 코드를 실행하지 않고 "
    "여러분의 단계 텐서를 채점합니다.",
    "help.check.target": "FILE.py:FUNCTION, 여러분의 함수(자식 프로세스에서 실행됩니다). "
    "--stages와 함께면 문제의 JSON 파일(표준 입력은 -).",
    "help.check.stages": "단계 id(ID 또는 ID@hH)별 단계 텐서를 담은 .npz 또는 JSON 파일, 또는 "
    "qkvcalc의 trace JSON: 코드를 실행하지 않고 문제와 비교해 채점합니다.",
    "help.check.preset": "--stages와 함께: 내장 프리셋을 문제로 씁니다.",
    "help.check.torch": "torch 텐서를 넘깁니다 (FILE.py가 torch를 import하면 기본값).",
    "help.check.problems": "시도할 문제 수 (정해 둔 문제 먼저, 그다음 무작위 문제).",
    "help.check.seed": "무작위 문제의 시드.",
    "help.check.time_limit": "함수 한 번 호출에 허용하는 초.",
    "help.check.format": "table (문장과 표) 또는 json (qkvcalc.check/1 문서).",
    "check.right": "{function}: 맞습니다. {count}개 문제 모두에서 올바른 수를 냈습니다.",
    "check.right_stages": "{function}: 맞습니다. 담긴 모든 단계의 수가 올바릅니다.",
    "check.error": "{function}: {total}개 문제 중 {count}개에서 예외를 냈습니다. 값을 "
    "돌려준 문제에서는 모든 수가 맞았습니다.",
    "check.wrong_named": "{function}: 틀렸습니다. {mistake}.",
    "check.wrong_unnamed": "{function}: 틀렸습니다. 이름 붙은 실수 중 모든 차이를 설명하는 "
    "것은 없습니다. 첫 차이는 아래와 같습니다.",
    "check.at_head": " (헤드 {head})",
    "check.first_cell": "첫 차이: 단계 {stage}{head}, 칸 [{row}, {col}]: 여러분의 값 {theirs}, "
    "올바른 값 {right}.",
    "check.first_shape": "첫 차이: 단계 {stage}{head}의 모양이 {theirs}입니다. 올바른 모양은 "
    "{right}입니다.",
    "check.raised_line": "문제 '{problem}'에서 예외: {type}: {message}",
    "check.raised_more": "… 그리고 문제 {count}개에서 더.",
    "check.smallest_title": "그것을 보여 주는 가장 작은 문제의 풀이:",
    "check.beside_title": "단계 {stage}: 올바른 수, 다른 칸에는 여러분의 수도 함께:",
    "check.yours": "여러분의 값",
    "check.right_word": "올바른 값",
    "check.beside_legend": "✗ 표시한 칸은 {yours}, 올바른 값 순서로 보여 줍니다.",
    "check.mistake.softmax_axis": "소프트맥스가 각 열을 따라(Query에 걸쳐) 계산되었습니다. "
    "소프트맥스는 각 행을 따라, Key에 걸쳐(axis -1) 계산하므로 Query마다 가중치의 합이 "
    "1입니다(그 행의 Key가 모두 마스크되면 0).",
    "check.mistake.no_scale": "스코어가 스케일되지 않았습니다. 소프트맥스 전에 1/√d_k를 곱합니다.",
    "check.mistake.scale_dk": "스코어를 d_k로 나눴습니다. 그 제곱근인 √d_k로 나눕니다.",
    "check.mistake.scale_twice": "스케일을 두 번 적용했습니다. 스코어에 1/√d_k를 한 번 곱합니다.",
    "check.mistake.scale_after_softmax": "소프트맥스 뒤에 가중치를 스케일했습니다. 스코어를 "
    "소프트맥스 전에 스케일하고, 그러면 가중치의 합은 1입니다.",
    "check.mistake.kt_missing": "스코어가 Q·K입니다. 스코어는 Query i와 Key j를 비교하므로 "
    "Q·Kᵀ입니다.",
    "check.mistake.scores_transposed": "스코어가 K·Qᵀ, 즉 뒤집혀 있습니다. Q·Kᵀ에서 i행은 "
    "Query i, j열은 Key j입니다.",
    "check.mistake.weights_transposed": "출력이 Aᵀ·V입니다. 출력은 A·V, 곧 각 Query의 가중치와 "
    "값의 곱입니다.",
    "check.mistake.mask_ignored": "마스크가 빠졌습니다. 마스크된 스코어는 소프트맥스 전에 −∞가 "
    "됩니다.",
    "check.mistake.mask_inverted": "마스크를 반대로 읽었습니다. PyTorch의 "
    "scaled_dot_product_attention처럼 True(1)는 볼 수 있다는 뜻입니다.",
    "check.mistake.causal_diagonal": "인과 마스크가 대각선까지 가렸습니다. 토큰은 자기 자신과 "
    "앞의 토큰을 볼 수 있습니다.",
    "check.mistake.causal_transposed": "인과 마스크가 미래(위쪽 삼각형)를 봅니다. Query i는 Key "
    "1…i, 곧 아래쪽 삼각형을 봅니다.",
    "check.mistake.mask_after_softmax": "마스크를 소프트맥스 뒤에 적용해서 마스크가 가린 칸이 "
    "있는 행은 합이 더는 1이 아닙니다. 마스크된 스코어는 소프트맥스 전에 −∞가 됩니다.",
    "check.mistake.masked_row_nan": "모든 Key가 마스크된 행이 NaN(0/0)이 되었습니다. PyTorch의 "
    "scaled_dot_product_attention처럼 가중치 0, 출력 0이 됩니다.",
    "check.mistake.masked_row_uniform": "모든 Key가 마스크된 행이 같은 가중치를 받았습니다"
    "(finfo.min 같은 유한한 채움 값). 가중치 0, 출력 0이 됩니다.",
    "check.mistake.no_max_shift": "소프트맥스가 행의 최댓값을 빼지 않아 큰 스코어에서 넘칩니다(e^s "
    "= inf, inf/inf = NaN). e^(s − max)는 같은 가중치를 안전하게 줍니다.",
    "check.mistake.heads_split": "헤드가 H번째 열마다 하나씩 가져갔습니다. 헤드 h는 Q, K, V의 "
    "h번째 d_k열 묶음을 가져갑니다.",
    "check.mistake.heads_concat": "헤드 출력이 열마다 번갈아 섞였습니다. 헤드 1의 d_v열부터 "
    "차례로 나란히 붙입니다.",
    "check.mistake.gqa_repeat": "K/V 헤드를 통째로 반복했습니다(tile). 연속한 Query 헤드가 K/V "
    "헤드 하나를 함께 씁니다(repeat_interleave).",
    "check.mistake.rope_pairs": "RoPE가 엉뚱한 차원끼리 짝지어 회전했습니다. rotate_half는 차원 "
    "i와 i + R/2를(R: 회전하는 차원의 수), 교차 방식(GPT-J)은 이웃한 차원끼리 1과 2, 3과 4, …를 "
    "짝짓습니다. 모델이 어느 쪽을 쓰는지는 문제의 rope.style이 정합니다.",
    "check.mistake.layout_transposed": "가중치를 전치해서 읽었습니다(X·Wᵀ, PyTorch가 "
    "저장하는 out×in 방식). 여기서는 Q = X·W_Q이고 W_Q는 d_model×d_k입니다.",
    "check.mistake.bias_missing": "편향이 빠졌습니다. Q = X·W_Q + b_Q이고 K, V, 출력도 같습니다.",
    "check.mistake.wo_missing": "W_O가 빠졌습니다. 나란히 붙인 헤드 출력에 W_O를 곱합니다.",
    "check.mistake.nondeterministic": "같은 문제에 두 번 호출했더니 다른 수가 나왔습니다(켜진 "
    "드롭아웃이나 시드 없는 난수). 어텐션 자체는 결정적입니다.",
    "check.no_file": "그런 파일이 없습니다: {path}. 함수를 FILE.py:FUNCTION으로 주세요.",
    "check.bad_function_name": "'{function}': 파이썬 이름이 아닙니다. 함수를 "
    "FILE.py:FUNCTION으로 주세요.",
    "check.no_target": "검사할 함수를 주세요: qkvcalc check FILE.py:FUNCTION (또는 단계가 나온 "
    "문제와 함께 --stages FILE).",
    "check.target_form": "'{target}': 함수를 가리키지 않습니다. FILE.py:FUNCTION으로 "
    "주세요(또는 문제와 함께 --stages FILE).",
    "check.unreadable": "읽을 수 없는 파일: {path} ({reason})",
    "check.no_torch": "{path} 파일이 torch를 import하거나 --torch를 주었는데, torch가 설치되어 "
    "있지 않습니다.",
    "check.no_function": "{path}에 없는 함수: '{function}'. 있는 함수: {names}.",
    "check.not_callable": "'{function}': {type}이며 호출할 수 있는 함수가 아닙니다.",
    "check.import_raised": "{path} 파일을 import하다가 {type} 예외가 났습니다: {message}",
    "check.child_ended": "{path} 파일을 import하는 프로세스가 검사 전에 끝났습니다.",
    "check.timed_out": "{function}: 문제 '{problem}'에서 {seconds}초 안에 돌아오지 "
    "않았습니다(시간 제한, --time-limit).",
    "check.problems_count": "--problems는 1에서 10,000 사이여야 합니다 (받은 값 {count}).",
    "check.time_limit": "--time-limit는 0보다 큰 초 단위 수여야 합니다 (받은 값 {seconds}).",
    "check.unknown_parameter": "{function}의 매개변수 '{name}': check가 채울 수 없습니다. "
    "check는 q, k, v(또는 query, key, value)나 x, wq, wk, wv를, 그리고 선택으로 mask, causal, "
    "scale, wo, heads, kv_heads와 편향 bq, bk, bv, bo를 넘깁니다(다른 매개변수에는 기본값이 "
    "필요합니다).",
    "check.no_roles": "{function}({params}): 호출할 수 없습니다. q, k, v(또는 query, key, "
    "value)나 x, wq, wk, wv라는 이름의 매개변수가 필요합니다.",
    "check.bad_return": "{function}: 돌려준 값이 {type}입니다. 출력(배열이나 텐서), 튜플 "
    "(output, weights), 또는 'output'을 담은 단계 id별 dict를 돌려주어야 합니다.",
    "check.no_output_stage": "{function}: 'output'이 없는 dict를 돌려주었습니다. 단계 dict는 "
    "출력을 id 'output'에 담아야 합니다.",
    "check.output_shape": "{function}: 문제 '{problem}'에서 돌려준 출력의 모양은 "
    "{theirs}이고, 그 문제의 출력은 {right}입니다. 출력은 Query마다 한 행, 값 차원마다 한 "
    "열입니다(n×d_v, 헤드는 나란히, W_O 뒤에는 n×d_model). 단계 dict의 'output'도 같습니다.",
    "check.stage_not_numbers": "{path}: 단계 '{stage}'의 값이 수의 행렬이 아닙니다.",
    "check.stages_not_object": '{path}: 단계 id별 객체({{"weights": [[…]]}})도, '
    "qkvcalc의 trace JSON도 아닙니다.",
    "check.unknown_stage": "{path}에 있는 '{stage}': 이 문제의 단계가 아닙니다. 이 문제의 "
    "단계: {known}.",
    "check.stages_empty": "{path}에 단계가 없습니다. 이 문제의 단계: {known}.",
    "check.stages_without_problem": "--stages에는 단계가 나온 문제가 필요합니다: JSON 파일(또는 -)"
    "이나 --preset NAME.",
    "check.preset_without_stages": "--preset은 --stages와 함께 씁니다. 함수는 check가 만든 "
    "문제로 검사합니다(FILE.py:FUNCTION).",
    # ---- the backward pass in tiles (issue 21) ----
    "stage.lse.title": "타일 역전파: log-sum-exp LSE",
    "stage.lse.why": "타일 순전파가 역전파를 위해 행마다 남기는 수 하나: 마지막 누적 최댓값과 "
    "누적 합으로 만든 LSE = m + log ℓ입니다. 이 수가 있으면 모든 가중치를 나중에 블록마다 e^(s − "
    "LSE)로 다시 계산할 수 있으므로, n×m 가중치 표는 어디에도 저장하지 않습니다.",
    "stage.rowdot_o.title": "타일 역전파: D = rowsum(dO ⊙ O)",
    "stage.rowdot_o.why": "소프트맥스 역전파에는 행마다 r = Σⱼ Aᵢⱼ·dAᵢⱼ가 필요한데, 이것은 가중치 "
    "한 행 전체를 읽습니다. dA = dO·Vᵀ이고 O = A·V이므로 이 값은 Σ dO ⊙ O, 곧 출력 행과 그 "
    "기울기의 곱의 합과 같습니다. FlashAttention-2는 블록을 처리하기 전에 이것을 한 번 계산합니다.",
    "stage.rowdot_o.attend.title": "타일 역전파: 목표에서 온 행 항 D",
    "stage.rowdot_o.attend.why": "이 손실은 출력이 아니라 가중치를 읽으므로, D = Σⱼ Aᵢⱼ·dAᵢⱼ에는 "
    "목표 Key의 항 하나만 있습니다: A[i, tᵢ]·(−1 / A[i, tᵢ]) = −1이고, 목표의 가중치는 "
    "e^(S[i, tᵢ] − LSE)로 다시 계산합니다. 목표가 없는 Query에서는 0입니다.",
    "stage.block_p.title": "타일 역전파: 블록의 가중치 P_b",
    "stage.block_p.why": "이 블록 Key들의 가중치를 로짓과 LSE에서 다시 계산합니다: P_b = e^(S_b − "
    "LSE). 저장하는 것보다 다시 계산하는 편이 비용이 적다는 것이 FlashAttention 역전파의 "
    "요령입니다. 마스킹된 Key는 정확히 0입니다.",
    "stage.grad_v_acc.title": "타일 역전파: 블록에 속한 dV의 행",
    "stage.grad_v_acc.why": "dV = Aᵀ·dO이고, 이 블록 Key들의 dV 행은 이 블록의 가중치만 "
    "읽습니다: dV_b = P_bᵀ·dO.",
    "stage.block_grad_p.title": "타일 역전파: 블록의 dP_b = dO·V_bᵀ",
    "stage.block_grad_p.why": "이 블록 가중치의 기울기: 각 출력 행의 기울기와 블록 Key들의 "
    "Value 행의 내적으로, dA = dO·Vᵀ를 열 블록 하나씩 계산한 것입니다.",
    "stage.block_grad_p.attend.title": "타일 역전파: 목표에서 온 블록의 dP_b",
    "stage.block_grad_p.attend.why": "이 블록 가중치에서 손실의 기울기: Query의 목표 Key가 이 "
    "블록에 있으면 −1 / P_b[i, tᵢ], 그 밖에서는 모두 0입니다.",
    "stage.block_grad_s.title": "타일 역전파: 블록의 dS_b = P_b ⊙ (dP_b − D)",
    "stage.block_grad_s.why": "이 블록 열들의 소프트맥스 역전파: 각 가중치에, 그 Key의 dP가 행의 "
    "D와 얼마나 다른지(dP_b − D)를 곱합니다. D는 블록을 처리하기 전에 계산했으므로 블록마다 다른 "
    "블록의 값이 필요 없습니다.",
    "stage.grad_q_acc.title": "타일 역전파: 누적된 dQ",
    "stage.grad_q_acc.why": "Key 블록마다 Query의 기울기에 자기 몫을 더합니다: "
    "dQ_b = dQ_(b−1) + d(Q·Kᵀ)_b·K_b. 마지막 블록 뒤에는 dQ 전체가 됩니다.",
    "stage.grad_k_acc.title": "타일 역전파: 블록에 속한 dK의 행",
    "stage.grad_k_acc.why": "이 블록의 Key들은 이 블록의 열들만으로 기울기를 얻습니다: "
    "dK_b = d(Q·Kᵀ)_bᵀ·Q.",
    "stage.grad_q_side.tiles.title": "역전파: 마지막 블록 뒤의 Query 기울기",
    "stage.grad_q_side.tiles.why": "모든 Key 블록에 걸쳐 더한 dQ: 타일 없이 계산한 것과 같은 "
    "Σⱼ d(Q·Kᵀ)ᵢⱼ·kⱼ를 블록 하나씩 더한 것입니다.",
    "stage.grad_k_acc.total.title": "역전파: 블록들의 행을 쌓은 Key 기울기",
    "stage.grad_k_acc.total.why": "블록마다 자기 Key들의 dK 행을 만들었고, 차례로 쌓으면 dK "
    "전체가 됩니다.",
    "stage.grad_v_acc.total.title": "역전파: 블록들의 행을 쌓은 V 기울기",
    "stage.grad_v_acc.total.why": "블록마다 자기 Key들의 dV 행을 만들었고, 차례로 쌓으면 dV "
    "전체가 됩니다.",
    "note.tiles_lse": "순전파가 저장한 값입니다. 모든 Key가 마스킹된 행은 ℓ = 0, LSE = −∞이고, "
    "아래에서 그 행의 가중치는 모두 0입니다.",
    "note.tiles_rowdot_o": "Σⱼ Aᵢⱼ·dAᵢⱼ = Σⱼ Aᵢⱼ·(dOᵢ·vⱼ) = dOᵢ·(Σⱼ Aᵢⱼ·vⱼ) = dOᵢ·Oᵢ: 가중치 행 "
    "없이 구한 소프트맥스 역전파의 행 항입니다.",
    "note.tiles_backward_equal": "블록 {blocks}개에 걸쳐 블록마다 더한 합계는 타일 없는 "
    "역전파와 같습니다 (이 헤드의 dQ, dK, dV; 최대 차이 {gap}). 모든 기울기는 Key에 대한 "
    "합이고, 블록은 그 합을 다른 순서로 더할 뿐입니다.",
    # ---- KV 캐시 디코딩, 타일 어텐션 ---------------------------------------------------------
    "stage.k_cache.title": "Key 캐시",
    "stage.k_cache.why": "지금까지 모든 토큰의 Key입니다. 디코딩 한 단계는 새 토큰의 Key만 "
    "계산해 덧붙이고, 이전 행은 캐시에서 읽을 뿐 다시 계산하지 않습니다.",
    "stage.v_cache.title": "Value 캐시",
    "stage.v_cache.why": "지금까지 모든 토큰의 Value를 Key 옆에 보관합니다. 새 토큰의 Value 행을 "
    "덧붙이고 이전 행은 그대로 씁니다.",
    "stage.output.decode.title": "출력 (각 단계의 행을 쌓음)",
    "stage.output.decode.why": "각 단계는 자기 토큰의 출력 행을 냈습니다. 순서대로 쌓으면 전체 "
    "시퀀스의 출력이며, causal 마스크로 한꺼번에 계산한 것과 같습니다.",
    "stage.block_scores.title": "Key 블록 하나의 스코어",
    "note.tiles_whole": "참고용으로 전체를 보여 줍니다: qkvcalc는 아래의 블록들과 비교할 수 "
    "있도록 이 표와 그다음 표들을 전체로 계산하지만, FlashAttention 자체는 이 표들을 한꺼번에 "
    "메모리에 두지 않고 Key 블록마다 그 스코어를 그때그때 계산합니다.",
    "stage.block_scores.why": "FlashAttention은 스코어 한 행 전체를 한꺼번에 메모리에 두지 "
    "않습니다. Key를 B개씩 읽으며, 이것은 각 행 중 이 블록에 해당하는 부분입니다.",
    "stage.block_max.title": "블록의 최댓값",
    "stage.block_max.why": "이 블록 안에서 각 행의 가장 큰 스코어입니다 (블록의 Key가 모두 "
    "마스킹되면 −∞).",
    "stage.running_max.title": "누적 최댓값 m",
    "stage.running_max.why": "지금까지 본 각 행의 가장 큰 스코어: 이전 누적 최댓값과 이 "
    "블록 최댓값 중 큰 값입니다. 지수함수에 넣기 전에 스코어에서 이를 빼므로 넘침이 없습니다.",
    "stage.correction.title": "보정 e^(m_old − m_new)",
    "stage.correction.why": "누적 최댓값이 커지면 지금까지 더한 값은 옛 최댓값만큼 이동되어 "
    "있습니다. e^(m_old − m_new)를 곱하면 새 최댓값 기준으로 바뀝니다. 최댓값이 그대로면 "
    "1입니다.",
    "stage.block_exp.title": "블록의 지수함수 값",
    "stage.block_exp.why": "블록의 각 스코어에서 누적 최댓값을 뺀 값에 지수함수를 "
    "적용합니다: 모든 값이 1 이하입니다.",
    "stage.running_sum.title": "누적 합 ℓ",
    "stage.running_sum.why": "지금까지의 소프트맥스 분모: 이전 합에 보정을 곱하고 이 블록의 "
    "지수함수 값을 더합니다.",
    "stage.acc.title": "누적 출력 O (아직 나누지 않음)",
    "stage.acc.why": "ℓ로 나누기 전의 Value 가중합: 이전 값에 보정을 곱하고, 이 블록의 "
    "지수함수 값과 Value 행의 곱을 더합니다.",
    "stage.output.tiles.title": "출력 = O / ℓ",
    "stage.output.tiles.why": "마지막에 한 번 나누면 누적 출력이 소프트맥스 가중 Value 합이 "
    "됩니다.",
    "ui.step": "디코딩 단계 {step}",
    "ui.block": "블록 {block}",
    "ui.variant.decode": "KV 캐시 디코딩 (prefill {prefill})",
    "ui.variant.tiles": "Key {tiles}개씩 타일로 나눈 소프트맥스",
    "note.decode_prefill": "0단계, prefill: 처음 {count}개 토큰(1–{last}행)이 함께 하나의 "
    "causal 어텐션을 거치고, 그 Key와 Value가 캐시를 채웁니다.",
    "note.decode_prefill_one": "0단계, prefill: 첫 토큰(1행) 하나만 토큰 하나의 causal 어텐션을 "
    "거치고, 그 Key와 Value로 캐시가 시작됩니다.",
    "note.decode_step": "{step}단계: 토큰 {row} ({token}, 위치 {pos}) 하나. 그 Query 행만 "
    "계산하며, 캐시의 모든 Key에 주의를 기울입니다.",
    "note.decode_cache_start": "캐시는 {name}의 1–{rows}행으로 시작합니다.",
    "note.decode_saved": "{old}행은 {step}단계의 캐시에서 그대로 옵니다 (다시 계산하지 "
    "않습니다). 새 토큰의 {row}행만 계산합니다. 이것이 캐시가 아끼는 것: 단계마다 모든 "
    "토큰이 아니라 토큰 하나만 투영합니다.",
    "note.decode_memory": "비용: 토큰마다 Key와 Value를 보관하므로 토큰당 2 × 층 수 × "
    "kv_heads × d_k개의 수입니다 (여기서는 한 층, kv_heads × (d_k + d_v) = {kv_heads} × "
    "({d_k} + {d_v}) = {per_token}). 토큰 {tokens}개면 층마다 {total}개입니다.",
    "note.decode_gqa": "Grouped-query attention이 이를 줄입니다: heads = {heads}에 "
    "kv_heads = {kv_heads}이므로 캐시는 토큰당 {full}개가 아니라 {per_token}개, {ratio}배 "
    "적습니다 (K/V 헤드만 캐시하고 Query는 보관하지 않습니다).",
    "note.decode_mask_prefill": "prefill의 마스크는 {count}×{count} 크기의 보통 causal "
    "마스크입니다.",
    "note.decode_bottom_right": "Query 하나와 Key {keys}개: 마스크는 causal 마스크의 마지막 "
    "행이며 오른쪽 아래에 맞춥니다 (Query는 가장 새 위치인 토큰 {row}에 있고 캐시의 모든 Key를 "
    "볼 수 있습니다). is_causal=True처럼 1×{keys} 마스크를 왼쪽 위에 맞추면 Key 1만 보게 "
    "되며, 이는 전형적인 캐시 버그입니다.",
    "note.decode_equal": "{steps}개 단계(prefill이 0단계)의 행을 쌓은 결과는 한꺼번에 계산한 "
    "보통의 causal 어텐션 결과와 같습니다 (최대 차이 {gap}).",
    "note.tiles_block": "블록 {block}/{blocks}: Key {keys}.",
    "note.tiles_running_max": "첫 블록 전에는 m = −∞이므로 m_1은 첫 블록의 최댓값입니다.",
    "note.tiles_correction_first": "첫 블록 전에는 m = −∞, ℓ = 0, O = 0이라 보정할 것이 "
    "없습니다 (e^(−∞) = 0).",
    "note.tiles_correction": "누적 최댓값이 그대로인 행은 1, 커진 행은 1보다 작고, 이전 합과 "
    "출력이 그만큼 줄어듭니다.",
    "note.tiles_running_sum": "ℓ_b = ℓ_(b−1)·e^(m_(b−1) − m_b) + Σ e^(s − m_b), ℓ_0 = 0에서 "
    "시작합니다.",
    "note.tiles_acc": "O_b = O_(b−1)·e^(m_(b−1) − m_b) + E_b·V_b, O_0 = 0에서 시작하며 아직 ℓ로 "
    "나누지 않았습니다.",
    "note.tiles_equal": "행 전체에 대한 보통의 softmax(S)·V와 같습니다 (최대 차이 {gap}): 보정마다 "
    "이전의 모든 e^(s − m_old)에 e^(m_old − m_new)를 곱했으므로 끝에서는 모든 항이 "
    "e^(s − m_final), 즉 처음부터 최종 최댓값을 뺀 것과 같습니다. O와 ℓ이 똑같이 조정되었으니 "
    "O / ℓ도 같습니다.",
    "hint.decode_q": "{cell}: 이 단계의 X 행({rows}) 중 {i}번째 행과 W_Q의 {j}번째 열의 곱입니다.",
    "hint.decode_rows": "{cell}: 이 단계의 X 행({rows}) 중 {i}번째 행과 {w}의 {j}번째 열의 "
    "곱입니다. 편향이 있으면 더합니다.",
    "hint.decode_stack": "{name}에 이미 있는 행은 이전 단계에서 복사합니다. 새 행({rows})은 이 "
    "단계의 {new}에서 복사합니다.",
    "hint.block_max": "{cell} = S_{block}의 {i}번째 행에서 가장 큰 값.",
    "hint.running_max": "{cell} = max(m_{before}[{i}], max S_{block}[{i}]) (블록 1은 max "
    "S_1[{i}]).",
    "hint.correction": "{cell} = e^(m_{before}[{i}] − m_{block}[{i}]) (블록 1은 0).",
    "hint.block_exp": "{cell} = e^(S_{block}[{i},{j}] − m_{block}[{i}]).",
    "hint.running_sum": "{cell} = ℓ_{before}[{i}]·c_{block}[{i}] + E_{block}의 {i}번째 행의 합.",
    "hint.acc": "{cell} = O_{before}[{i},{j}]·c_{block}[{i}] + E_{block}의 {i}번째 행과 이 "
    "블록 V 행들의 {j}번째 열의 곱.",
    "hint.tiles_output": "{cell} = O_{block}[{i},{j}] / ℓ_{block}[{i}].",
    "help.explain.decode": "KV 캐시로 디코딩: P개 토큰의 prefill(없으면 0) 뒤, 이후 토큰마다 "
    "커지는 캐시와 함께 한 단계씩 (causal 실행).",
    "help.explain.tiles": "FlashAttention 방식으로 Key B개 블록마다 softmax를 계산: 블록마다 "
    "누적 최댓값, 보정, 누적 합, 출력.",
    "decode.range": "decode = {value}: prefill 길이 P는 0부터 {last}(n − 1, 토큰 n = {n}개)까지의 "
    "정수여야 적어도 한 토큰을 단계별로 디코딩합니다. P = 0이면 모든 토큰을 디코딩합니다.",
    "decode.mask": "decode에는 causal 마스크가 필요합니다 (mask는 {mask}): 생성 중인 토큰은 "
    "자신과 앞선 토큰만 봅니다. mask를 빼거나 (decode가 causal로 만듭니다) 패딩은 "
    "key_padding으로 주세요.",
    "decode.cross": "decode는 시퀀스 자신의 Key를 캐시하는 self-attention을 보여 줍니다. source가 "
    "있으면 (cross-attention, n = {n}, m = {m}) source의 K와 V는 한 번 계산해 모든 단계에서 다시 "
    "쓰므로 단계마다 늘지 않고, 보여 줄 자라나는 캐시가 없습니다. "
    "source나 decode를 빼세요.",
    "decode.needs_x": "decode는 X·W_K와 X·W_V로 토큰 하나씩 캐시를 만듭니다: Q, K, V 대신 x, wq, "
    "wk, wv를 주세요.",
    "tiles.range": "tiles = {value}: 블록 크기 B는 1 이상의 정수(Key 개수)여야 합니다 (B ≥ "
    "m = {m}이면 블록 하나, 보통의 소프트맥스).",
    "tiles.too_many_blocks": "tiles = {tiles}이면 키 {m}개가 블록 {blocks}개로 나뉩니다. "
    "qkvcalc는 블록을 {limit}개까지만 보여 주므로 tiles를 {least} 이상으로 주세요",
    "tiles.with_decode": "decode와 tiles를 함께 쓸 수 없습니다 (decode = {decode}, tiles = "
    "{tiles}): 하나를 고르세요. 각각 따로 단계별로 보여 줍니다.",
    "note.decode_rope": "새 토큰마다 자기 위치({positions})만큼 한 번 회전합니다: 캐시된 Key는 "
    "자기 위치의 회전을 그대로 가지므로, 단계의 위치는 prefill의 위치를 이어야 합니다 (여기서 "
    "어긋나는 것이 전형적인 캐시 버그입니다).",
    # ---- qkvcalc train (issue 21) ----
    "preset.learn.description": "학습: pronoun 예제의 문장에 무작위 가중치를 넣은 것으로, 'it'은 "
    "아직 'cat'을 보지 않습니다. qkvcalc train이 보도록 가르칩니다",
    "preset.learn.reference": "qkvcalc를 위해 만든 예제입니다. 문장과 X는 pronoun 프리셋의 "
    "것이고(열: 명사, 대명사, 동사나 형용사, 그 밖의 단어), W_Q, W_K, W_V는 무작위입니다: "
    "numpy.random.default_rng(25).standard_normal((4, 2)) · 0.5를 W_Q, W_K, W_V 순서로 "
    "뽑아 소수 둘째 자리까지 반올림했습니다. 이 가중치에서 'it'은 'cat'에 가중치의 10%만 "
    "주고, 가장 큰 가중치(30%)는 자기 자신에게 줍니다. attend는 'it'에게만 'cat'(Key 2)을 "
    "보라고 하고, 다른 단어에는 목표가 없습니다(null). 그래서 손실은 이야기의 중심인 연결 "
    "하나, L = −log A[it, cat]이고, 다른 단어가 무엇을 보는지는 자유롭게 둡니다. qkvcalc "
    "train --preset learn(20단계, η = 0.5)은 'it'이 'cat'에 98%를 줄 때까지 W_Q와 W_K를 "
    "움직입니다. 손실이 어텐션 가중치만 읽으므로 W_V는 움직이지 않습니다. attend는 가르치기 "
    "위한 지름길입니다. 실제 모델은 어디를 보라는 말을 듣지 않고, 출력에 둔 손실에서 W_Q, W_K, "
    "W_V를 배웁니다(referent 프리셋).",
    "help.train": "문제의 attend나 target에서 시작해 경사 하강법으로 가중치를 학습하고, 단계마다 "
    "손실과, 학습 전후의 가중치와 어텐션 가중치를 보여 줍니다.",
    "help.train.source": "attend나 target이 있는 입력 형식의 JSON(또는 .npz) 파일, 또는 표준 "
    "입력을 뜻하는 -.",
    "help.train.preset": "내장 프리셋 (learn, referent, referent64는 학습용으로 만든 "
    "프리셋입니다).",
    "help.train.attend": '문제의 손실 대신 쓸, 각 Query가 주목해야 할 Key (1부터 셈, "2 - 1": '
    "목표가 없으면 -): L = −Σᵢ log A[i, tᵢ].",
    "help.train.target": "문제의 손실 대신 쓸 목표 출력 T (n × d_out, explain의 --x와 같은 "
    "형식): L = ½·Σ(O − T)².",
    "help.train.steps": "경사 하강법의 갱신 횟수, 1부터 10,000까지 (기본값 20).",
    "help.train.lr": "W ← W − η·∂L/∂W의 학습률 η, 0보다 큰 수 (기본값 0.5).",
    "help.train.freeze": '움직이지 않을 가중치, 쉼표로 구분: "wv,wo". 이름은 wq, wk, wv, wo, '
    'bq, bk, bv, bo와 문제의 층이 더하는 가중치이며, 각각 "학습한 가중치:"에 보이는 대로 쓰거나 '
    '"_" 없이 소문자로 씁니다(MLA의 W_DQ 또는 wdq, …; 선형 층의 w_norm 또는 norm, …). '
    "전부는 docs/train.md에 있습니다.",
    "help.train.output": "이 파일에 씁니다. 확장자에 따라 .svg는 손실 곡선, .html은 페이지, "
    ".txt는 텍스트이고, .json(또는 그 밖의 이름)은 학습된 문제(qkvcalc explain이 읽는 JSON 문제, "
    "--format json과 함께 쓰면 학습 문서 전체)입니다.",
    "help.train.format": "출력 형식: table, txt, json (qkvcalc.train/1 문서), svg (손실 곡선), "
    "html (손실 곡선이 있는 페이지).",
    "help.train.step": "터미널에서 갱신을 한 번에 하나씩 보여 줍니다: Enter나 Space는 다음, q는 "
    "끝내기.",
    "help.studio": "문제의 어떤 수든 고치고 모든 단계가 따라 바뀌는 것을 봅니다. 행렬은 입력 "
    "칸으로, 모든 단계는 표로, 포커스된 칸의 계산은 그 아래에 보입니다 (터미널의 Textual 앱, "
    "--serve로는 브라우저).",
    "help.studio.source": "입력 형식의 JSON (또는 .npz) 파일.",
    "help.studio.preset": "내장 프리셋 (qkvcalc presets list).",
    "help.studio.random": "작은 무작위 정수 (qkvcalc quiz --random과 같음).",
    "help.studio.seed": "--random과 함께: 같은 수를 다시 얻기 위한 시드.",
    "help.studio.size": '--random과 함께: "n,d_model" (기본값 "3,2").',
    "help.studio.save": "s가 문제를 JSON으로 저장할 곳 (기본값 qkvcalc-studio.json).",
    "help.studio.serve": "이 터미널에서 실행하는 대신 스튜디오를 브라우저에 제공합니다 "
    "(qkvcalc[serve] 필요).",
    "help.studio.host": "--serve와 함께: 수신할 주소 (기본값 127.0.0.1, 이 컴퓨터만; 0.0.0.0이면 "
    "교실 네트워크에서도 열 수 있습니다).",
    "help.studio.port": "--serve와 함께: 포트 (기본값 8000).",
    "train.title": "qkvcalc train 학습 · {name}",
    "train.title_unnamed": "qkvcalc train 학습",
    "train.trained_description_unnamed": "qkvcalc train으로 학습한 문제: 경사 하강법 {done}단계, "
    "η = {lr}.",
    "train.header": "경사 하강법: {steps}단계, 학습률 η = {lr}, 단계마다 W ← W − η·∂L/∂W.",
    "train.stopped": "경사 하강법(학습률 η = {lr}): {steps}단계 중 {done}단계를 마치고 Ctrl-C로 "
    "멈췄습니다. 지금까지 학습한 결과입니다.",
    "train.loss_attend": "손실 L = −Σᵢ log A[i, tᵢ]: L이 작을수록 각 Query가 목표 Key에 더 큰 "
    "가중치를 줍니다 (attend).",
    "train.loss_target": "손실 L = ½·Σ(O − T)²: L이 작을수록 출력 O가 목표 T에 더 가깝습니다.",
    "train.learned": "학습한 가중치: {names}.",
    "train.frozen": "고정한 가중치 (--freeze, 움직이지 않음): {names}.",
    "train.indexer_fixed": "희소 어텐션 인덱서의 가중치 (W_IQ, W_IK, Key의 LayerNorm, W_w)는 "
    "움직이지 않습니다: 손실이 이들에게 기울기를 주지 않습니다 (top-k는 고르기이며, 역전파에서는 "
    "마스크로 고정됩니다). 각 단계는 잠재 어텐션을 학습하고, 인덱서는 주어진 가중치 그대로 각 "
    "Query의 Key를 다시 고릅니다.",
    "train.unreached": "손실이 닿지 않아(기울기가 없어) 움직이지 않은 가중치: {names}.",
    "train.losses": "단계별 손실",
    "train.col_step": "단계",
    "train.col_loss": "L",
    "train.col_change": "변화",
    "train.elided": "표시하지 않은 단계 {count}개",
    "train.spark": "{first}에서 {last}까지.",
    "train.weights": "학습 전후의 가중치 (Δ: 움직인 양)",
    "train.unchanged": "움직이지 않은 가중치: {name}",
    "train.before": "전",
    "train.after": "후",
    "train.attention": "학습 전후의 어텐션 가중치",
    "train.target": "'{query}' → '{key}': {before} → {after}",
    "train.target_head": "헤드 {head}: '{query}' → '{key}': {before} → {after}",
    "train.update": "갱신 {steps}번 중 {step}번째",
    "train.update_loss": "손실: 이 갱신 전 {before}, 후 {after}.",
    "train.update_rule": "학습하는 각 가중치 W는 ΔW = −η·∂L/∂W만큼 움직입니다 (η = {lr}). 따라서 "
    "W' = W + ΔW입니다.",
    "train.update_keys": "Enter나 Space: 다음 갱신 · q: 끝내기",
    "train.plot_title": "단계별 손실 L",
    "train.trained_description": "qkvcalc train으로 학습한 문제: {name}에서 시작해 경사 하강법 "
    "{done}단계, η = {lr}.",
    "train.steps": "--steps는 1부터 {limit}까지의 정수여야 합니다. 받은 값: {value}",
    "train.lr": "--lr(학습률 η)은 0보다 큰 수여야 합니다. 받은 값: {value}",
    "train.loss": "qkvcalc train에는 줄여 나갈 손실이 필요합니다: attend(각 Query가 볼 Key) "
    "또는 target(도달할 출력) 키를 주세요. 이 문제에 있는 것: {given}. grad_output은 기울기만 "
    "주고 줄일 손실은 주지 않습니다.",
    "train.loss_none": "없음",
    "train.no_weights": "qkvcalc train은 W_Q, W_K, W_V(와 W_O)를 학습하는데, 이 문제는 Q, K, "
    "V를 직접 줍니다. 대신 X와 가중치를 주세요.",
    "train.schedule": "qkvcalc train은 보통의 순전파와 역전파만 계산하므로 이 키는 받지 "
    "않습니다: {option}",
    "train.freeze_unknown": "--freeze: 가중치 이름은 {names} 중 하나여야 합니다. 받은 이름: {name}",
    "train.freeze_missing": "--freeze: 이 문제에 없는 가중치: {names} (있는 가중치: {has}).",
    "train.attend_hidden": "{step}단계 뒤에는 목표 Key 하나가 가려집니다: Query {row}, Key "
    "{key} (attend[{row}] = {key}). 각 Query가 볼 수 있는 Key는 움직인 가중치에서 고르며 (희소 "
    "어텐션 인덱서의 top-k), 볼 수 없는 Key를 보도록 가르칠 수는 없습니다. 단계를 줄이거나 더 작은 "
    "--lr로 학습하거나, 인덱서가 남기는 Key 가운데서 목표를 주세요.",
    "train.all_frozen": "--freeze가 문제의 모든 가중치를 고정하므로 움직일 것이 없습니다.",
    "train.too_big": "가중치와 어텐션 가중치가 {numbers}개인 문제를 {steps}단계 학습하면 수를 "
    "{limit}개보다 많이 보관해야 합니다. 최대 {most}단계로 줄여 주세요.",
    "train.diverged": "단계 {step}에서 손실이 더 이상 유한한 수가 아닙니다. 이 수들에는 학습률"
    "(η = {lr})이 너무 큽니다. 더 작은 --lr을 써 보세요.",
    "train.nothing_reached": "고정하지 않은 가중치({names})에는 손실이 닿지 않습니다. 기울기가 "
    "없으므로 움직일 것이 없습니다.",
    "train.step_format": "--step은 갱신을 터미널에 보여 주므로 다음과 함께 쓸 수 없습니다: "
    "--format {format}, --output",
    "train.output_not_json": "--output {path}: train은 학습된 문제(.json), 손실 곡선(.svg), "
    "페이지(.html), 텍스트(.txt)를 쓰는데, 파일 이름의 끝이 {ext}입니다. 그중 하나로 이름을 "
    "지으세요.",
    # ---- the interactive page (--format html: qkvcalc/render/page.py, page.js) ------------
    "page.language_name": "한국어",
    "page.present": "발표 모드 (p)",
    "page.document": "문서로 (Esc)",
    "page.keys_title": "이 페이지의 단축키",
    "page.key_next": "다음 단계 (발표 모드)",
    "page.key_back": "이전 단계 (발표 모드)",
    "page.key_number": "단계 번호를 치고 Enter: 그 단계로 (발표 모드)",
    "page.key_first_last": "첫 단계, 마지막 단계 (발표 모드)",
    "page.key_group": "다음 디코드 단계 또는 다음 Key 블록으로; 지금 단계(블록)의 처음으로, "
    "또는 그 앞 단계(블록)의 처음으로 (발표 모드)",
    "page.key_help": "단축키 목록 보이기/숨기기",
    "page.key_why": "이 단계의 설명 보이기/숨기기 (발표 모드)",
    "page.why_open": "설명 보기 (w)",
    "page.why_close": "설명 숨기기 (w)",
    "page.key_exit": "이 목록 닫기; 발표 모드 끝내기",
    "page.key_present": "발표 모드 켜기/끄기: 한 화면에 한 단계",
    "page.key_cells": "Tab으로 표마다 들어가고, 화살표로 칸을 옮기며 각 칸의 계산을 봅니다",
    "page.language": "페이지의 언어 바꾸기",
    "page.why_given": "주어진 값: 이 표는 계산의 입력이며, 따로 적을 계산이 없습니다.",
    "page.why_masked": "마스킹됨: 이 Query는 이 Key를 볼 수 없으므로 스코어가 무엇이었든 "
    "−∞가 됩니다 (가중치는 0이 됩니다).",
    "page.why_kept": "마스킹되지 않음: 스코어가 그대로 지나갑니다.",
    "page.why_copy": "표시된 칸과 같은 수를 그대로 가져온 것입니다.",
    "page.why_none": "이 칸의 계산은 이 페이지에 적혀 있지 않습니다. 표시된 칸은 이 칸을 "
    "계산하는 데 쓰인 칸 중 페이지에 보이는 칸입니다.",
    "page.why_unmarked": "이 칸의 계산은 이 페이지에 적혀 있지 않고, 이 칸을 계산하는 데 쓴 "
    "칸도 여기에 보이지 않습니다.",
    "page.why_masked_grad": "마스크됨: 이 Query는 이 Key에 주목하지 않으므로 이 칸에는 기울기가 "
    "오지 않습니다: 0입니다.",
    "page.picture_title": "그림으로 보는 어텐션 가중치",
    "page.picture_why": "헤드마다의 가중치: 히트맵(Query와 Key마다 한 칸, 진할수록 가중치가 큼) "
    "또는 각 Query의 토큰에서 각 Key의 토큰으로 이은 선(가중치만큼 굵음). 칸이나 선을 누르면 "
    "가중치 표의 그 칸과 계산을 보여 줍니다.",
    "page.heatmap": "히트맵",
    "page.lines": "선",
    "page.head": "헤드 {head}",
    "page.legend": "가중치:",
    "page.picture_part": "그림은 Query {total_n}개 중 처음 {n}개와 Key {total_m}개 중 처음 "
    "{m}개를 보여 줍니다.",
    "page.picture_cell": "{query} → {key}: 가중치 {weight}",
    "page.not_shown": "이 칸은 이 페이지의 가중치 표에 보이는 칸이 아닙니다.",
    "page.two_langs_html": "--lang {langs}: 두 언어를 한 페이지에 담는 것은 --format html만 "
    "할 수 있습니다 (지금 형식은 {format}). 언어를 하나만 주거나 html로 쓰세요.",
    "help.explain.lang": "en 또는 ko (기본값: QKVCALC_LANG, LC_ALL, LANG에 따라 정해짐); "
    "--format html과 함께 en,ko 또는 ko,en: 두 언어가 담기고 전환 버튼이 있는 html 페이지 "
    "(앞의 언어를 먼저 보여 줌).",
    # ---- the backward pass (--backward): how attention learns ---------------------------
    "backward.no_loss": "--backward에는 기울기가 시작할 곳이 필요합니다. 다음 중 하나를 주세요: "
    "grad_output (dL/dO, n × d_out), target (T, n × d_out; L = ½·Σ(O − T)²), attend (Query마다 "
    "Key 하나, 1부터 셈; L = −Σᵢ log A[i, tᵢ])",
    "backward.no_loss_mixer": "--backward에는 기울기가 시작할 곳이 필요합니다. grad_output "
    "(dL/dO, n × d_out)이나 target (T, n × d_out; L = ½·Σ(O − T)²)을 주세요(attend의 손실은 "
    "소프트맥스 가중치에 두는데, 선형 어텐션 층에는 그것이 없습니다).",
    "backward.attend_mixer": "attend는 손실을 소프트맥스 가중치에 두는데, 선형 어텐션 층에는 "
    "그것이 없습니다. 이 층은 n×n 가중치 행렬을 만들지 않고, qkvcalc가 옆에 보여 주는 W(상태가 "
    "모아 더한 것)의 행은 합이 1일 필요가 없습니다. target을 주세요 (explain --backward는 "
    "grad_output도 받습니다).",
    "backward.decode": "--backward는 시퀀스 전체에 한 번에 실행됩니다. decode를 빼 주세요 (KV "
    "캐시는 수를 계산하는 시점을 바꿀 뿐, 기울기는 바꾸지 않습니다)",
    "loss.several": "기울기가 시작할 곳은 하나만 주세요. 지금 여러 개입니다: {keys}",
    "loss.shape": "{field}의 모양은 {rows}×{cols}인데 출력은 n × d_out = {n}×{d_out}입니다. "
    "Query마다 한 행, 출력 열마다 한 열이어야 합니다",
    "loss.attend_count": "attend에는 Query마다 Key가 하나씩 필요합니다. Query는 n = {n}개인데 "
    "주어진 것은 {count}개입니다 (목표가 없는 Query는 null)",
    "loss.attend_count_typed": "attend에는 Query마다 Key가 하나씩 필요합니다. Query는 n = "
    "{n}개인데 주어진 것은 {count}개입니다 (목표가 없는 Query는 -)",
    "loss.attend_key": "attend[{row}]의 값이 {value}입니다. 1부터 m = {m}까지의 Key 번호(표처럼 "
    "1부터 셈)이거나, 목표가 없으면 null이어야 합니다",
    "loss.attend_key_typed": "attend[{row}]의 값이 {value}입니다. 1부터 m = {m}까지의 Key "
    "번호(표처럼 1부터 셈)이거나, 목표가 없으면 -여야 합니다",
    "loss.attend_empty": "attend에 Key가 하나도 없습니다. Query 하나 이상에 목표 Key를 주세요",
    "loss.attend_masked": "attend[{row}] = {key}인데, 마스크 때문에 Query {row}에서는 Key {key}에 "
    "주목할 수 없습니다. 볼 수 없는 Key를 보도록 가르칠 수는 없습니다",
    "stage.grad_output.target.title": "역전파: 손실의 기울기 dO",
    "stage.grad_output.target.why": "학습은 출력이 얼마나 틀렸는지 말해 주는 수 하나에서 "
    "시작합니다. 여기서는 L = ½·Σ(O − T)², 곧 목표 T까지의 거리의 제곱의 절반입니다. 그 기울기 "
    "dL/dO는 그냥 O − T이고, 각 칸은 그 출력 칸이 손실을 어느 쪽으로 얼마나 세게 끄는지를 부호와 "
    "크기로 말합니다. 출력 칸은 그 반대쪽, 곧 T 쪽으로 움직여야 합니다.",
    "stage.grad_output.given.title": "역전파: 주어진 기울기 dO",
    "stage.grad_output.given.why": "dL/dO가 PyTorch의 out.backward(grad)가 받는 것처럼 직접 "
    "주어졌습니다. 위쪽의 손실이 무엇이든, 각 출력 칸은 이 기울기의 반대 방향으로 움직일 때 "
    "손실이 줄어듭니다. 아래의 모든 단계는 여기에 연쇄 법칙을 한 단계씩 거꾸로 적용한 것입니다.",
    "stage.grad_output.head.title": "역전파: 이 헤드가 받는 기울기의 몫",
    "stage.grad_output.head.why": "각 헤드는 이어 붙인 행렬에서 자기 열만 썼습니다. 그래서 각 "
    "헤드는 d(concat)에서 바로 그 열들만 돌려받고, 다른 헤드의 몫은 받지 않습니다.",
    "stage.grad_concat.title": "W_O를 거슬러 역전파",
    "stage.grad_concat.why": "출력은 concat·W_O였으므로, 이어 붙인 행렬에 닿는 기울기는 "
    "dO·W_Oᵀ입니다. 이어 붙인 각 열은 자기가 모든 출력 열에 기여한 만큼을 모아 받습니다.",
    "stage.grad_concat.copy.title": "이어 붙이기를 거슬러 역전파",
    "stage.grad_concat.copy.why": "W_O가 없으면 출력이 곧 이어 붙인 행렬이므로, 기울기가 바뀌지 "
    "않고 그대로 지나갑니다.",
    "stage.grad_wo.title": "W_O의 기울기",
    "stage.grad_wo.why": "W_O[a, b]는 모든 토큰에서 이어 붙인 열 a를 출력 열 b에 곱해 넣었습니다. "
    "그래서 그 기울기는 토큰들에 걸친 concat[i, a]·dO[i, b]의 합, 곧 concatᵀ·dO입니다. 경사 "
    "하강법 한 걸음은 W_O를 이 기울기의 반대 방향으로 움직입니다.",
    "stage.grad_bo.title": "b_O의 기울기",
    "stage.grad_bo.why": "b_O는 모든 행에 더해지므로, 각 성분은 모든 토큰에서 자기 열의 기울기를 "
    "모아 받습니다. 곧 dO의 열별 합입니다.",
    "stage.grad_v.title": "역전파: V의 기울기",
    "stage.grad_v.why": "출력은 A·V였습니다. Value 행 j는 가중치 Aᵢⱼ만큼 Query i에 전해졌습니다. "
    "그래서 V의 기울기는 Aᵀ·dO입니다. 각 Value 행은 자기를 읽은 Query들의 출력 기울기를, 읽은 "
    "만큼의 가중치로 모아 받습니다. 아무도 주목하지 않는 Value는 기울기를 받지 않습니다.",
    "stage.grad_weights.title": "역전파: 가중치 A의 기울기",
    "stage.grad_weights.why": "dA = dO·Vᵀ: 가중치 Aᵢⱼ를 키우면 출력 행 i에 Value 행 j가 더 "
    "섞입니다. 그래서 그 기울기는 출력 행 i의 기울기와 Value 행 j의 내적입니다. Value j가 출력 "
    "i가 가야 할 방향(−dOᵢ)을 잘 가리킬수록 이 값은 음수 쪽으로 더 커집니다.",
    "stage.grad_weights.attend.title": "역전파: 목표에서 온 가중치의 기울기",
    "stage.grad_weights.attend.why": "손실 −Σᵢ log A[i, tᵢ]는 각 Query가 목표 Key tᵢ에 가중치를 "
    '두도록 요구합니다. "어느 토큰을 봤어야 했나"라는 질문입니다. 그 기울기는 목표 칸에서 '
    "−1/A[i, tᵢ], 나머지에서 0입니다. 지금 그 가중치가 작을수록 더 세게 밀어 줍니다. 이것은 "
    "가르치기 위한 지름길입니다. 실제 모델은 어디를 보라는 말을 듣지 않으며, 출력을 거쳐 A에 닿는 "
    "예측 오차에서 W_Q와 W_K를 배웁니다(--target). 헤드가 여럿이면 이 손실은 모든 헤드를 같은 Key "
    "쪽으로 밉니다.",
    "stage.softmax_rowdot.title": "소프트맥스 역전파 (1/2): 행 항",
    "stage.softmax_rowdot.why": "로짓 하나를 키우면 그 행의 다른 모든 Key에서 가중치를 "
    "가져옵니다. 소프트맥스는 한 행을 통째로 나누어 주기 때문입니다. rᵢ = Σⱼ Aᵢⱼ·dAᵢⱼ는 그 행의 "
    "dA를 가중치 A로 평균한 값입니다. 싱크가 있으면 그 몫은 dA = 0으로 셉니다. 이것이 각 Key의 "
    "dA를 잴 기준선입니다.",
    "stage.grad_logits.title": "소프트맥스 역전파 (2/2): 로짓의 기울기",
    "stage.grad_logits.why": "dS = A ⊙ (dA − r): 로짓의 기울기는 그 가중치에, 그 Key의 dA가 행의 "
    "평균 r과 얼마나 다른지를 곱한 것입니다. 평균보다 더 도움이 될 Key(dA < r)는 위로, 덜 도움이 "
    "될 Key(dA > r)는 아래로 밀리며, 밀리는 정도는 그 가중치에 비례합니다(가중치가 0인 마스킹된 "
    "Key는 전혀 밀리지 않습니다). 가중치 자신의 도함수 Aᵢⱼ·(1 − Aᵢⱼ)는 0과 1 근처에서 작으므로, "
    "포화된 소프트맥스는 크기가 제한된 dA(출력을 거쳐 A에 닿는 손실)를 거의 돌려보내지 못합니다. "
    "스코어를 스케일링하는 이유입니다. attend의 −1/A처럼 가중치가 작아질수록 커지는 dA는 막히지 "
    "않습니다.",
    "stage.grad_back.mask.title": "마스크를 거슬러 역전파",
    "stage.grad_back.mask.why": "마스킹된 로짓은 스코어와 상관없이 −∞로 바뀌었으므로, 그 "
    "스코어의 기울기는 정확히 0입니다. 볼 수 없는 Key에서는 배울 수 없습니다. [M ≠ −∞]는 "
    "Key가 허용된 곳에서 1, 마스킹된 곳에서 0입니다.",
    "stage.grad_back.scale.title": "스케일링을 거슬러 역전파",
    "stage.grad_back.scale.why": "스코어에 스케일을 곱했으므로, 그 기울기는 로짓의 기울기에 "
    "같은 스케일을 곱한 것입니다. 기본값 1/√d_k(소프트맥스의 포화를 막으려고 두는 값)처럼 1보다 "
    "작은 스케일은 스코어를 줄인 만큼 거꾸로 흐르는 기울기도 줄입니다.",
    "stage.grad_back.add.title": "스코어 바이어스를 거슬러 역전파",
    "stage.grad_back.add.why": "바이어스 B는 더해지기만 하고 여기서 학습되지 않으므로, 기울기가 "
    "바뀌지 않고 스케일링된 스코어로 그대로 지나갑니다.",
    "stage.grad_back.softcap.title": "소프트캡을 거슬러 역전파",
    "stage.grad_back.softcap.why": "c·tanh(s/c)의 도함수는 1 − tanh²(s/c)입니다. 작은 "
    "스코어에서는 1에 가깝고, 캡을 씌운 값이 ±c에 가까워지는 스코어(|s|가 c보다 훨씬 큰 "
    "스코어)에서는 0에 가깝습니다. 캡의 목적은 로짓을 묶어 두는 것(어느 것도 ±c를 넘지 않음)이고, "
    "캡에 걸린 스코어가 거의 배우지 않는 것은 그 부작용이지 목적이 아닙니다.",
    "stage.grad_back.rope.title": "RoPE를 거슬러 역전파",
    "stage.grad_back.rope.why": "RoPE는 차원 쌍마다 그 위치의 각도 φ만큼 돌렸습니다. 회전의 "
    "전치는 반대 방향 회전이므로, 기울기를 쌍마다 −φ만큼 돌립니다. 같은 각도를 반대로 돌리는 "
    "것입니다.",
    "stage.grad_back.rmsnorm.title": "q/k 정규화를 거슬러 역전파",
    "stage.grad_back.rmsnorm.why": "정규화는 각 행에 ρ = 1/√(mean(x²) + ε)와 w를 곱했습니다. 그 "
    "역전파는 두 부분입니다: 기울기에 같은 비율을 곱한 ρ·(w ⊙ g)에서, 행의 길이만 바꾸는 "
    "부분(정규화가 상쇄하는 부분)을 뺍니다.",
    "stage.grad_q_side.title": "역전파: Query의 기울기",
    "stage.grad_q_side.why": "스코어 i,j는 qᵢ·kⱼ였으므로, Query 행 i는 Σⱼ d(Q·Kᵀ)ᵢⱼ·kⱼ를 "
    "받습니다. 스코어가 올라가야 할 Key 쪽으로 끌리고, 스코어가 내려가야 할 Key에서는 멀어집니다.",
    "stage.grad_k_side.title": "역전파: Key의 기울기",
    "stage.grad_k_side.why": "같은 곱을 Key 쪽에서 본 것입니다. Key 행 j는 Σᵢ d(Q·Kᵀ)ᵢⱼ·qᵢ, 곧 "
    "자기 스코어 각각이 바뀌어야 할 만큼으로 가중한 Query 행들의 합을 받습니다.",
    "stage.grad_wq.title": "W_Q의 기울기",
    "stage.grad_wq.why": "Q = X·W_Q이므로 dW_Q = Xᵀ·dQ입니다. 각 가중치는 토큰들에 걸쳐, 자기 "
    "입력 수와 자기가 만든 Query 칸의 기울기의 곱을 모읍니다. 어텐션은 이렇게 배웁니다. W_Q가 "
    "이 행렬의 반대 방향으로 조금 움직이면, 모든 문장의 Query가 바뀝니다.",
    "stage.grad_wk.title": "W_K의 기울기",
    "stage.grad_wk.why": "K = X·W_K(크로스 어텐션에서는 소스의 행)이므로 dW_K = Xᵀ·dK입니다. 각 "
    "Key가 어떻게 달라졌어야 하는지가 모여, Key를 만드는 단 하나의 행렬을 어떻게 바꿀지가 됩니다.",
    "stage.grad_wv.title": "W_V의 기울기",
    "stage.grad_wv.why": "V = X·W_V이므로 dW_V = Xᵀ·dV입니다. 각 Value가 어떻게 달라졌어야 "
    "하는지가 모여, Value를 만드는 행렬을 어떻게 바꿀지가 됩니다.",
    "stage.grad_bq.title": "b_Q의 기울기",
    "stage.grad_bq.why": "b_Q는 모든 Query 행에 더해지므로, 그 기울기는 dQ의 열별 합입니다.",
    "stage.grad_bk.title": "b_K의 기울기",
    "stage.grad_bk.why": "b_K는 모든 Key 행에 더해지므로, 그 기울기는 dK의 열별 합입니다.",
    "stage.grad_bv.title": "b_V의 기울기",
    "stage.grad_bv.why": "b_V는 모든 Value 행에 더해지므로, 그 기울기는 dV의 열별 합입니다.",
    "stage.grad_x.title": "역전파: 입력 X의 기울기",
    "stage.grad_x.why": "X는 자신을 읽고 손실에 닿는 선형 투영마다 경로를 하나씩 가집니다. 다변수 "
    "연쇄 법칙은 그 경로들을 더합니다. 경로 하나가 항 dP·W_Pᵀ 하나이므로, 위의 식에는 경로마다 "
    "항이 하나씩 있습니다(dV·W_Vᵀ는 손실이 V를 읽을 때만). 이것이 아래 층으로 흘러가는 "
    "기울기입니다.",
    "stage.grad_x.one.title": "역전파: 입력 X의 기울기",
    "stage.grad_x.one.why": "크로스 어텐션에서 X는 Query만 만듭니다(Key와 Value는 소스에서 "
    "나옵니다). 그래서 X가 손실에 닿는 경로는 하나뿐이고, 연쇄 법칙이 더할 것이 없습니다: "
    "dX = dQ·W_Qᵀ, 곧 Query의 기울기를 전치한 W_Q로 되돌려 보낸 것입니다. 이것이 아래 층으로 "
    "흘러가는 기울기입니다.",
    "note.grad_attend_no_v": "이 손실은 가중치만 읽으므로, Value와 그것을 만들거나 쓰는 것은 "
    "손실에 닿지 않고 기울기를 받지 않습니다({names}). 역전파는 dA에서 스코어, Q, K로 갑니다.",
    "stage.grad_source.title": "역전파: 소스의 기울기",
    "stage.grad_source.why": "소스는 K와 V를 만들고, 이 손실은 둘 다에 닿습니다. 다변수 연쇄 "
    "법칙은 두 경로를 더합니다: dsource = dK·W_Kᵀ + dV·W_Vᵀ (Query의 경로는 X로 갑니다).",
    "stage.grad_source.one.title": "역전파: 소스의 기울기",
    "stage.grad_source.one.why": "소스는 K와 V를 만들지만, 이 손실은 가중치만 읽으므로 V는 "
    "손실에 닿지 않습니다. 그래서 소스의 기울기는 Key의 경로 하나로만 돌아오고, 연쇄 법칙이 더할 "
    "것이 없습니다: dsource = dK·W_Kᵀ (Query의 경로는 X로 갑니다).",
    "stage.grad_sinks.title": "싱크의 기울기",
    "stage.grad_sinks.why": "싱크의 로짓은 각 행에서 1 − Σⱼ Aᵢⱼ만큼의 몫을 가져갔습니다. 그것을 "
    "키우면 가중치가 Key들에서 '아무것도 아닌 곳'으로 옮겨 가므로, 그 기울기는 "
    "−Σᵢ (그 몫)·rᵢ이고 헤드마다 수 하나입니다.",
    "note.grad_layout_torch": "W가 주어진 방식(out × in, --layout torch)으로 나타낸 것입니다: "
    "위의 곱을 전치한 것입니다.",
    "note.grad_heads_side_by_side": "헤드 {heads}개의 기울기를 나란히 놓았습니다. 각 헤드가 "
    "{weight}에서 자기 열을 읽었기 때문입니다.",
    "note.grad_kv_shared": "Key/Value 헤드 하나를 Query 헤드 {per}개가 함께 쓰므로, {weight}에서 "
    "함께 쓰는 열은 그 기울기들의 합을 받습니다.",
    "note.grad_paths": "{x} → 선형 투영 {count}개({names}): 모두 이 손실에 닿으므로, 기울기는 그 "
    "경로 {count}개의 합입니다 (다변수 연쇄 법칙).",
    "note.grad_pe": "위치 인코딩은 X에 더해질 뿐 학습되지 않으므로, X + PE의 기울기가 곧 X의 "
    "기울기입니다.",
    "note.loss_target": "이 수들이 주는 손실: L = ½·Σ(O − T)² {eq} {loss}.",
    "note.loss_attend": "이 수들이 주는 손실: L = −Σᵢ log A[i, tᵢ] {eq} {loss} (목표 Key "
    "{count}개에 걸쳐).",
    "note.loss_attend_head": "헤드 {head}의 손실 몫: −Σᵢ log A[i, tᵢ] {eq} {loss} (목표 Key "
    "{count}개에 걸쳐; 손실은 모든 헤드의 몫을 더합니다).",
    "note.loss_attend_one": "이 수들이 주는 손실: L = −Σᵢ log A[i, tᵢ] {eq} {loss} (목표 Key "
    "하나에 대해).",
    "note.loss_attend_head_one": "헤드 {head}의 손실 몫: −Σᵢ log A[i, tᵢ] {eq} {loss} (목표 Key "
    "하나에 대해; 손실은 모든 헤드의 몫을 더합니다).",
    "note.grad_through_softmax": "기울기로 본 √d_k: 로짓 하나가 자기 가중치를 아직 얼마나 움직일 "
    "수 있는지는 ∂Aᵢⱼ/∂Sᵢⱼ = Aᵢⱼ·(1 − Aᵢⱼ)이고, 0.25를 넘지 않습니다. 이 헤드에서 그 최댓값은 "
    "{eq_with} {with_}이고, 스코어를 스케일링하지 않으면({root} 없이) {eq_without} "
    "{without}입니다.",
    "note.grad_through_softmax_given": "주어진 스케일을 기울기로 보면: 로짓 하나가 자기 가중치를 "
    "아직 얼마나 움직일 수 있는지는 ∂Aᵢⱼ/∂Sᵢⱼ = Aᵢⱼ·(1 − Aᵢⱼ)이고, 0.25를 넘지 않습니다. 이 "
    "헤드에서 그 최댓값은 {eq_with} {with_}이고, 스코어를 스케일링하지 않으면({root} 없이) "
    "{eq_without} {without}입니다.",
    "note.grad_scores_smaller": "Q와 K에 닿는 것은 스코어 Q·Kᵀ의 기울기입니다. 여기서 그 "
    "크기(성분 제곱합의 제곱근)는 {eq_with} {with_}이고, 스코어를 스케일링하지 않으면 "
    "{eq_without} {without}입니다. 스케일링이 없으면 더 작습니다.",
    "note.grad_scores_larger": "Q와 K에 닿는 것은 스코어 Q·Kᵀ의 기울기입니다. 여기서 그 크기(성분 "
    "제곱합의 제곱근)는 {eq_with} {with_}이고, 스코어를 스케일링하지 않으면 {eq_without} "
    "{without}입니다. 스케일링이 없으면 작아지지 않고 오히려 더 큽니다.",
    "note.grad_saturated": "스케일링하지 않은 소프트맥스는 포화됩니다. 가중치가 0과 1 근처에 "
    "몰리고, 그곳에서 도함수 A·(1 − A)가 0에 가까워 dA가 Q와 K(그리고 그것을 만드는 W_Q와 "
    "W_K)까지 거의 전해지지 않습니다. √d_k로 나누면 스코어는 소프트맥스가 아직 기울기를 전할 수 "
    "있는 범위에 머뭅니다.",
    "note.grad_saturated_given": "스케일링하지 않은 소프트맥스는 포화됩니다. 가중치가 0과 1 "
    "근처에 몰리고, 그곳에서 도함수 A·(1 − A)가 0에 가까워 dA가 Q와 K(여기서는 직접 주어졌고, 층 "
    "안에서라면 그것을 만드는 W_Q와 W_K)까지 거의 전해지지 않습니다. √d_k로 나누면 스코어는 "
    "소프트맥스가 아직 기울기를 전할 수 있는 범위에 머뭅니다.",
    "note.grad_scale_shrinks": "여기서 스케일링하지 않은 소프트맥스는 포화되지 않았습니다(그 "
    "A·(1 − A)의 최댓값이 스케일링한 쪽의 10분의 1보다 큽니다). 차이는 막힌 소프트맥스가 아니라, "
    "스케일링하지 않은 스코어가 만드는 다른 가중치에서 옵니다.",
    "note.grad_log_cancels": "이 손실 −Σ log A는 소프트맥스의 사라지는 도함수를 상쇄합니다. "
    "목표가 있는 행에서 로짓의 기울기는 목표 Key에서 Aᵢⱼ − 1, 나머지에서 Aᵢⱼ이므로, 소프트맥스가 "
    "틀린 Key에 포화되어 있어도 크기가 1 가까이로 유지됩니다. 그래서 여기서는 스케일링이 학습을 "
    "지켜 주지 않습니다. 실제 모델처럼 손실이 출력을 거쳐 A에 닿을 때 지켜 줍니다(--target으로 해 "
    "보세요).",
    "note.grad_not_saturated": "여기서는 스케일링이 학습을 지켜 주지 않습니다. 스케일링하지 않은 "
    "소프트맥스가 기울기를 막을 만큼 포화되지 않았고, 스케일링한 쪽의 기울기는 돌아오는 길에 "
    "스케일만큼 한 번 더 곱해집니다. d_k가 크면 스케일링하지 않은 소프트맥스가 포화되기 "
    "쉽습니다(--preset dk64에 --target을 주어 해 보세요).",
    "note.grad_scale_sharpens": "여기서는 스케일링이 학습을 지켜 주지 않습니다. 1보다 큰 스케일은 "
    "스코어를 더 벌려 놓으므로, 스케일링한 소프트맥스가 둘 중 더 포화된 쪽이고(위의 A·(1 − A) "
    "최댓값이 더 작습니다) 돌아오는 길에 스케일을 곱하는데도 더 적게 돌려보냅니다.",
    "note.grad_path_one": "{x} → 선형 투영 1개({names}): 기울기는 그 경로 하나로 돌아옵니다.",
    "note.grad_paths_some": "{x} → 선형 투영 {count}개({names}): 그중 이 손실에 닿는 것은 "
    "{reach}뿐이므로, 기울기는 그 경로 {reached}개의 합입니다 (다변수 연쇄 법칙).",
    "note.grad_path_one_of": "{x} → 선형 투영 {count}개({names}): 그중 이 손실에 닿는 것은 "
    "{reach} 하나뿐이므로, 기울기는 그 경로 하나로 돌아옵니다.",
    "note.grad_kv_heads_side_by_side": "Key/Value 헤드 {heads}개의 기울기를 나란히 놓았습니다. "
    "각각은 자기 헤드를 만든 {weight}의 열에 있습니다.",
    "note.loss_target_rows": "T, 도달할 출력(행마다): {rows}.",
    "note.loss_target_rows_approx": "T, 도달할 출력(행마다, 소수 넷째 자리로 반올림): {rows}.",
    "note.loss_attend_keys": "각 Query가 보아야 할 Key(attend): {pairs}.",
    "help.usage": "사용법: ",
    "help.heading.options": "옵션",
    "help.heading.arguments": "인자",
    "help.heading.commands": "명령",
    "help.default": "[기본값: {value}]",
    "help.required": "[필수]",
    "help.help_option": "이 도움말을 보여 주고 끝냅니다.",
    "help.train.compare_scale": "같은 출발점에서 두 번 학습합니다. 한 번은 문제의 스케일로, 한 "
    "번은 스케일 1로 학습하고 두 손실을 나란히 보여 줍니다. 이 문제에서 √d_k가 학습에 무엇을 "
    "하는지 보여 줍니다.",
    "train.progress": "학습 중",
    "train.progress_unscaled": "스케일 1로 학습 중",
    "train.compare_scale_mixer": "--compare-scale은 스코어를 스케일링하지 않고 한 번 더 "
    "학습하는데, 선형 어텐션 층은 다시 스케일링할 스코어를 만들지 않습니다(소프트맥스가 없고, "
    "1/√d_k가 있으면 q̂에 곱합니다). 비교할 것이 없습니다.",
    "train.compare_scale_one": "--compare-scale은 스케일 1로 한 번 더 학습하는데, 이 문제의 "
    "스케일이 이미 1입니다. 비교할 것이 없습니다.",
    "dataset.not_list": "{key}의 값은 예제(입력 형식의 객체)들의 목록이어야 하며, examples에는 "
    "하나 이상 있어야 합니다.",
    "dataset.too_many": "{key}에 예제가 {count}개 있습니다. 읽는 것은 {limit}개까지입니다.",
    "dataset.not_object": "{key}[{index}]의 값은 입력 형식의 객체(tokens, x, target, attend "
    "…)여야 합니다.",
    "dataset.shared": "{key}[{index}]에 {field} 키가 있습니다. 가중치는 모든 예제가 함께 쓰므로 "
    "맨 위에 한 번만 줍니다.",
    "dataset.in_example": "{key}[{index}]",
    "train.dataset": "가중치를 함께 쓰는 예제 {count}개의 데이터 세트입니다. 손실 L은 예제 "
    "손실들의 평균이고, 기울기도 그렇습니다.",
    "train.dataset_heldout": "따로 떼어 두고 학습에 쓰지 않은 예제: {count}개 더 (아래에서 학습 "
    "전과 후의 가중치로 보여 줍니다).",
    "train.attend_shortcut": "attend는 가르치기 위한 지름길입니다. 실제 모델은 어디를 보라는 말을 "
    "듣지 않습니다. 모델은 예측 오차에서 가중치를 배우며, 그 오차는 출력을 거쳐 어텐션 "
    "가중치에 닿습니다(출력에 손실을 두는 --preset referent로 해 보세요).",
    "train.attend_heads": "헤드가 {heads}개이면 attend는 Query마다 모든 헤드를 같은 Key 쪽으로 "
    "밉니다(손실이 헤드마다의 −log A를 더하므로). 실제 모델에서는 헤드마다 자기 패턴을 자유롭게 "
    "찾습니다.",
    "train.unmoved": "{names}: 전혀 움직이지 않았습니다. 모든 단계에서 기울기가 정확히 "
    "0이었습니다.",
    "train.unmoved_one_key": "{names}: 전혀 움직이지 않았습니다. 각 Query가 볼 수 있는 Key가 "
    "하나뿐이라 스코어와 상관없이 가중치가 1이므로(A ≡ 1), 스코어의 기울기가 모든 단계에서 정확히 "
    "0입니다.",
    "train.diverging": "손실이 {done}단계 중 {rose}단계에서 커졌고, 끝에는 처음의 {ratio}배가 "
    "되었습니다(마지막 단계에서는 ×{last}). η가 충분히 작으면 경사 하강법은 손실을 키우지 "
    "않으므로, 이 문제에는 학습률(η = {lr})이 너무 큽니다. 더 작은 --lr로 해 보세요.",
    "train.rose_back": "손실이 {done}단계 중 {rose}단계에서 커졌습니다. 가장 낮았던 값은 "
    "{step}단계의 L {low}, 마지막 값은 L {last}입니다. 기울기의 반대쪽으로 충분히 짧게 한 걸음 "
    "가면 손실은 언제나 줄어들므로, 손실이 커진 단계에서는 학습률(η = {lr})이 너무 컸습니다. 더 "
    "작은 --lr로 해 보세요.",
    "train.rose_some": "손실이 {done}단계 중 {rose}단계에서 커졌다가, 끝에는 가장 낮은 값(L "
    "{last})으로 내려갔습니다. 기울기의 반대쪽으로 충분히 짧게 한 걸음 가면 손실은 언제나 "
    "줄어들므로, 손실이 커진 단계에서는 학습률(η = {lr})이 너무 컸습니다.",
    "train.log_scale": "(막대는 로그 눈금입니다. 손실이 적어도 {decades}자릿수에 걸쳐 있습니다.)",
    "train.scale_hint": "소프트맥스 전에 스코어를 √d_k(= √{dk} {root})로 나눕니다. 무작위 "
    "벡터라면 d_k개 항의 내적이 퍼진 정도는 √d_k에 비례해 커지므로, 이렇게 나누면 d_k가 "
    "얼마이든 스코어가 퍼진 정도가 같게 유지됩니다. --compare-scale은 같은 출발점에서 스케일 "
    "1로 한 번 더 학습해, 이 문제에서 그 나눗셈이 학습에 무엇을 하는지 보여 줍니다.",
    "train.scale_hint_given": "소프트맥스 전에 스코어에 이 문제의 스케일(= {scale})을 곱합니다"
    "(1/√d_k라면 {default}). --compare-scale은 같은 출발점에서 스케일 1로 한 번 더 학습해, 이 "
    "문제에서 그 스케일이 학습에 무엇을 하는지 보여 줍니다.",
    "train.compare_title": "스케일이 있을 때와 스케일 1일 때의 손실",
    "train.col_unscaled": "L, 스케일 1",
    "train.spark_scaled": "스케일 {scale}:",
    "train.spark_unscaled": "스케일 1:",
    "train.compare_lower": "같은 가중치에서 출발해 L: 스케일 {scale}일 때 {first} → {last}, "
    "스케일 1일 때 {first_other} → {other}. {done}단계 뒤에는 스케일링한 쪽의 손실이 더 "
    "낮습니다{times}.",
    "train.compare_higher": "같은 가중치에서 출발해 L: 스케일 {scale}일 때 {first} → {last}, "
    "스케일 1일 때 {first_other} → {other}. {done}단계 뒤에는 스케일링하지 않은 쪽의 손실이 더 "
    "낮습니다{times}.",
    "train.compare_equal": "같은 가중치에서 출발해 L: 스케일 {scale}일 때 {first} → {last}, "
    "스케일 1일 때 {first_other} → 같은 값.",
    "train.compare_times": "({ratio}분의 1)",
    "train.heldout": "따로 떼어 둔 예제 (학습에 쓰지 않음)",
    "train.heldout_example": "따로 떼어 둔 예제 {index}: {tokens}",
    "train.heldout_loss": "학습 전과 후의 가중치로 본 손실: {before} → {after}.",
    "train.heldout_top": "'{query}' → 가중치가 가장 큰 Key: '{key}' {after} (학습 전: "
    "'{key_before}' {before}).",
    "train.heldout_top_head": "헤드 {head}: '{query}' → 가중치가 가장 큰 Key: '{key}' {after} "
    "(학습 전: '{key_before}' {before}).",
    "train.example_title": "예제 {index}: {tokens}",
    "train.examples_elided": "보여 주지 않은 예제: {count}개.",
    "preset.referent.description": "예제에서, 출력을 거쳐 배우기: 'it'이 문장의 단어들 가운데 "
    "동물을 찾아야 합니다. 문장 다섯 개로 배우고, 본 적 없는 여섯 번째 문장으로 시험합니다",
    "preset.referent.reference": "qkvcalc용으로 만든 예제. Query는 'it' 하나(X = [0, 0, 0, 0, 1]: "
    "마지막 열이 대명사 표시)이고, 문장의 단어들(소스)을 읽습니다. 소스의 열은 동물 여부, 동물 "
    "하나와 사물 하나가 함께 쓰는 3열짜리 식별 코드(dog·ball, cat·box, bird·cup), 대명사 "
    "표시입니다. 목표 T는 문장에 있는 동물의 식별 코드이므로 손실 L = ½·Σ(O − T)²는 실제 모델처럼 "
    "출력에 있습니다. 어디를 보라는 말은 아무도 하지 않습니다. 문장마다 동물과 코드가 다른 사물을 "
    "짝지었으므로, W_V만으로는 모든 T를 낼 수 없고 동물에 주목해야만 낼 수 있습니다. W_V는 코드를 "
    "그대로 옮기는 값으로 시작하고, W_Q와 W_K는 'it'이 사물에 가중치를 조금 더 주는(54%) 값으로 "
    "시작합니다. qkvcalc train --preset referent(20단계, η = 0.5)는 예제 다섯 개로 "
    "학습하고(손실은 그 평균), 따로 떼어 둔 문장 'box bird'를 학습 전과 후에 보여 줍니다: 'it'이 "
    "'bird'에 주는 가중치가 46%에서 79%가 됩니다.",
    "preset.referent64.description": "d_k = 64에서 W_Q와 W_K가 무작위인 referent 데이터 세트: "
    "--compare-scale이 출력을 거쳐 배울 때 √64로 나누는 것이 학습에 무엇을 하는지 보여 줍니다",
    "preset.referent64.reference": "qkvcalc용으로 만든 예제: referent 프리셋의 문장, X, W_V, "
    "손실(문장에 있는 동물의 식별 코드, 출력에 둠)을 그대로 쓰고, W_Q와 W_K는 폭 64의 무작위 "
    "행렬입니다: W_Q, W_K 순서로 numpy.random.default_rng(4).standard_normal((5, 64)).round(2). "
    "그러면 스코어 q·k마다 곱 64개를 더하므로, 스케일링하지 않은 스코어는 스케일링한 것의 여덟 "
    "배입니다. 스케일 1에서는 예제 다섯 개 중 네 개가 한 단어에 0.99가 넘는 가중치로 "
    "시작하고(나머지 하나는 0.90), 이렇게 포화된 소프트맥스는 출력에서 오는 기울기를 거의 "
    "돌려보내지 못합니다. √64 = 8로 나누면 모든 가중치가 0.17과 0.83 사이에서 시작합니다. qkvcalc "
    "train --preset referent64 --compare-scale(20단계, η = 0.5): 평균 손실은 스케일이 있을 때 ≈ "
    "0.3085에서 ≈ 0.0108로, 스케일 1에서 ≈ 0.4017에서 ≈ 0.179로 갑니다. 따로 떼어 둔 문장에서 "
    "'it'이 'bird'에 주는 가중치는 10%에서 63%가 됩니다.",
    "train.dataset_loss_option": "{option}: 문제 하나의 손실을 정하는 옵션인데, 이것은 예제마다 "
    "손실을 가진 데이터 세트입니다. 예제마다 target이나 attend를 주세요.",
    # ---- the norm over the joined heads, BitNet's attn_sub_norm (qkvcalc/ops/sub_norm.py) ----
    "ui.variant.sub_norm": "W_O 앞에서 이어 붙인 헤드들에 걸친 RMSNorm(BitNet의 attn_sub_norm), "
    "ε = {eps}",
    "stage.sub_rms.title": "모든 헤드에 걸친 행마다의 제곱평균제곱근",
    "stage.sub_rms.why": "BitNet은 헤드들의 출력을 나란히 이어 붙이고, 각 행을 전체 너비에 걸친 "
    "RMSNorm 하나로 정규화합니다(o_proj 앞의 attn_sub_norm). 토큰마다 근 하나를 모든 헤드가 "
    "함께 씁니다.",
    "stage.sub_normed.title": "이어 붙인 헤드들에 걸쳐 정규화한 헤드 출력",
    "stage.sub_normed.why": "각 헤드의 출력을 그 행의 근(모든 헤드가 함께 씀)으로 나누고, 정규화의 "
    "학습된 가중치 중 그 헤드의 열을 곱합니다. 그다음 concat이 이들을 이어 붙이고 W_O가 "
    "섞습니다.",
    "stage.grad_sub_rms.title": "역전파: 행마다의 근의 기울기",
    "stage.grad_sub_rms.why": "근 r은 모든 헤드의 정규화한 출력이 읽었으므로, 그 기울기는 모든 "
    "헤드의 몫을 더한 것입니다(연쇄 법칙의 경로별 합).",
    "stage.grad_sub_norm.title": "역전파: 정규화 가중치의 기울기",
    "stage.grad_sub_norm.why": "out_N = out / r ⊙ w: 각 가중치는 모든 행에서 정규화한 출력의 "
    "한 열에 곱해졌으므로, 그 기울기는 토큰들에 걸쳐 그 열의 d(out_N)에 out / r을 곱해 더한 "
    "것입니다.",
    "note.sub_rms": "r = √(행의 수 {width}개의 제곱의 평균 + ε), ε = {eps}: 헤드들의 출력을 "
    "나란히 놓은 행입니다(H·d_v에 걸친 BitNetRMSNorm).",
    "mistake.sub_norm_per_head": "이 값은 각 헤드의 출력을 그 헤드만의 제곱평균제곱근(d_v개의 "
    "수)으로 정규화했습니다. 이 정규화는 모든 헤드를 이어 붙인 행(H·d_v개)마다 근 하나를 씁니다.",
    "sub_norm.eps_alone": "sub_norm 없이 sub_norm_eps만 주어졌습니다: 이어 붙인 헤드들에 걸친 "
    "정규화에는 가중치(H·d_v개의 수)가 필요합니다.",
    "sub_norm.length": "sub_norm의 수는 {length}개이지만, 이어 붙인 헤드들에 걸친 정규화에는 "
    "H·d_v = {heads}×{d_v} = {width}개가 필요합니다: 나란히 놓은 헤드들의 열마다 가중치가 "
    "하나씩 있습니다.",
    "sub_norm.eps": "sub_norm_eps는 0보다 큰 수(근 안의 ε)여야 합니다. 주어진 값: {value}",
    "sub_norm.with_gate": "이어 붙인 헤드들에 걸친 정규화(sub_norm)와 출력 게이트(wg)는 함께 "
    "계산하지 않습니다: 둘 중 하나를 빼세요.",
    "sub_norm.with_differential": "이어 붙인 헤드들에 걸친 정규화(sub_norm)와 차분 어텐션은 함께 "
    "계산하지 않습니다: 둘 중 하나를 빼세요.",
    "precision.sub_rms_eager": "BitNetRMSNorm처럼: 헤드 출력을 나란히 놓고 float32로 mean(x²)와 "
    "√(mean + ε)를 계산합니다(정규화는 그 역수를 곱합니다). 이 단계의 수와 마지막 자리 단위는 "
    "float32의 것이고, 출력은 {dtype} 값이었습니다.",
    "precision.sub_normed_eager": "BitNetRMSNorm처럼: out과 1/r의 곱을 float32로 계산해 {dtype} "
    "값으로 바꾼 뒤, 가중치({dtype} 값)와의 곱을 {dtype} 값으로 반올림합니다.",
}
