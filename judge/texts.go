package judge

import "github.com/flowerrun/flower/doc"

// texts are what the judgement tells the person and the worker.
type texts struct {
	twice, unknown, absent, notJudged, noEvidence, noEvidenceShort string
	contradicted, contradicts, groundless, grounds, problemsHead   string
	notMeasured, stripped, nothingRun                              string
	unmeasured, needsLook, except, noneVerifiable                  string
	askAgain                                                       string // why
}

var textsZh = texts{
	twice:           "判定项 %s 被判了不止一次:只要有一次不是通过,它就没通过",
	unknown:         "判定里出现了判定清单中没有的项:%s",
	absent:          "判定项 %s 没有被判定",
	notJudged:       "没有判定",
	noEvidence:      "判定项 %s 判为通过,却没有给出证据",
	noEvidenceShort: "通过但没有证据",
	contradicted:    "判定项 %s 判为通过,但 flower 自己运行了 `%s`:%s",
	contradicts:     "结论说已达成,但判定项并非全部带证据通过:按未达成处理",
	groundless:      "结论说无法达成,却没有说清缺的是什么、为什么再干一轮也补不上:按未达成处理",
	grounds:         "缺少:%s\n为什么干活补不上:%s",
	problemsHead:    "flower 读判定时发现:",
	except:          "已达成,除了设定目标时就标为在这台机器上无法验证的判定项:它们没有通过,也不算在内:",
	noneVerifiable:  "每一条判定项都标为在这台机器上无法验证:没有什么能说明目标已达成,按未达成处理",
	notMeasured:     "判定项 %s 有命令 `%s`,flower 却没能自己运行它(%s):有命令的判定项只凭 flower 的运行结果通过",
	stripped:        "判定项 %s 的证据里有控制字符或改变文字方向的字符,已去掉:这一轮它不算通过",
	nothingRun:      "结论说无法达成,但什么都没运行过,或者每一项都通过了:按未达成处理",
	needsLook:       "需要你看一眼:判定者判为已达成,但变更报告标记了 %d 处不做实事也能让检查通过的改动;flower 不会因此判达成:",
	unmeasured:      "已达成,但没有测量:flower 没能自己运行判定项 %s 的命令(%s),它们只凭判定者的阅读通过",
	askAgain:        "你的回答读不了(%s)。请按给你的 schema 用 StructuredOutput 工具重新回答,只调用一次:判定清单里的每一项都要有一条,用它的 id。",
}

var textsEn = texts{
	twice:           "item %s was judged more than once: any finding but passed stands",
	unknown:         "the verdict names items the checklist does not have: %s",
	absent:          "item %s was not judged",
	notJudged:       "not judged",
	noEvidence:      "item %s was passed without evidence",
	noEvidenceShort: "passed without evidence",
	contradicted:    "item %s was passed, but flower ran `%s` itself: %s",
	contradicts:     "the conclusion says achieved, but not every item passed with evidence: taken as not yet",
	groundless:      "the conclusion says unreachable without naming what is missing and why no round of work can supply it: taken as not yet",
	grounds:         "Missing: %s\nWhy no work can supply it: %s",
	problemsHead:    "flower found, reading the verdict:",
	except:          "achieved, except the items marked unverifiable on this machine when the goal was set: they did not pass, and are left out:",
	noneVerifiable:  "every item is marked unverifiable on this machine: nothing can show the goal achieved: taken as not yet",
	notMeasured:     "item %s has the command `%s`, which flower could not run itself (%s): a command item passes only on flower's own run",
	stripped:        "the evidence of item %s held control or text-direction characters, removed: it does not pass this round",
	nothingRun:      "the conclusion says unreachable while nothing was run, or while every item passed: taken as not yet",
	needsLook:       "needs your look: the judge ruled it achieved, but the change report flagged %d changes that can make a check pass without the work; flower does not end it achieved:",
	unmeasured:      "achieved, not measured: flower could not run the commands of %s itself (%s); they passed on the judge's reading alone",
	askAgain:        "Your answer could not be read (%s). Answer again through the StructuredOutput tool, once, by the schema you were given: one entry for every checklist item, by its id.",
}

// Invariant is the sentence every goal's statement ends with (the judge's
// rules ask for it word for word; Goal adds it when they did not).
func Invariant(lang doc.Lang) string {
	return lang.Pick("判定项、测试、CI 配置和这个目标都保持原样:哪一样都不许为了通过而被削弱、跳过或改动。",
		"The checks, the tests, the CI configuration and this goal stay as they are: none of them is weakened, skipped or edited to make something pass.")
}

func textsFor(lang doc.Lang) texts {
	if lang.IsEnglish() {
		return textsEn
	}
	return textsZh
}
